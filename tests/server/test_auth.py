"""Auth and tenants, the body limit and CORS, over real HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from starlette.requests import Request

from tenxgraph.errors import ConfigError
from tenxgraph.server.auth import api_keys, parse_api_keys
from tests.server.conftest import Serve

KEYS = {"key-a": "alice", "key-b": "bob"}


def as_user(base_url: str, key: str, header: str = "bearer") -> httpx.Client:
    if header == "bearer":
        return httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {key}"})
    return httpx.Client(base_url=base_url, headers={"x-api-key": key})


def test_api_keys_scope_every_thread_to_its_user(serve: Serve) -> None:
    url = serve(authenticate=api_keys(KEYS))
    with as_user(url, "key-a") as alice, as_user(url, "key-b", "x-api-key") as bob:
        assert alice.post("/threads", json={"thread_id": "t1"}).status_code == 200
        for response in (
            bob.get("/threads/t1"),
            bob.get("/threads/t1/state"),
            bob.post("/threads/t1/history", json={}),
            bob.post("/threads/t1/state", json={"values": {}}),
            bob.patch("/threads/t1", json={"metadata": {"x": 1}}),
            bob.delete("/threads/t1"),
            bob.post("/threads/t1/copy"),
            bob.post("/threads/t1/tools/add", json={"args": {"a": 1, "b": 2}}),
            bob.get("/threads/t1/messages"),
            bob.get("/threads/t1/window"),
            bob.get("/threads/t1/state/1"),
        ):
            assert response.status_code == 404, (response.request.url, response.text)
        assert bob.post("/threads/search", json={}).json() == []
        # the same id is a different thread for bob, and alice's is untouched
        assert (
            bob.post("/threads", json={"thread_id": "t1", "metadata": {"b": 1}}).status_code == 200
        )
        assert alice.get("/threads/t1").json()["metadata"] == {}
        assert [t["thread_id"] for t in alice.post("/threads/search", json={}).json()] == ["t1"]


def test_missing_or_unknown_key_is_401_and_health_needs_none(serve: Serve) -> None:
    url = serve(authenticate=api_keys(KEYS))
    with httpx.Client(base_url=url) as anonymous, as_user(url, "wrong") as wrong:
        for response in (anonymous.get("/threads/t1"), wrong.post("/threads", json={})):
            assert response.status_code == 401
            assert "API key" in response.json()["detail"]
            assert response.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/ok").status_code == 200
        assert anonymous.get("/openapi.json").status_code == 200


def test_async_authenticate_function(serve: Serve) -> None:
    async def by_header(request: Request) -> str | None:
        await asyncio.sleep(0)
        return request.headers.get("x-user")

    url = serve(authenticate=by_header)
    with httpx.Client(base_url=url) as client:
        client.post("/threads", json={"thread_id": "t"}, headers={"x-user": "carol"})
        assert client.get("/threads/t", headers={"x-user": "carol"}).status_code == 200
        assert client.get("/threads/t", headers={"x-user": "dave"}).status_code == 404
        assert client.get("/threads/t").status_code == 401
        bad = client.get("/threads/t", headers={"x-user": "x" * 300})
        assert bad.status_code == 400 and "user_id" in bad.json()["detail"]


def test_body_limit(serve: Serve) -> None:
    url = serve(max_body_bytes=2000)
    with httpx.Client(base_url=url) as client:
        big = {"thread_id": "t", "metadata": {"blob": "x" * 5000}}
        response = client.post("/threads", json=big)
        assert response.status_code == 413 and "2000 bytes" in response.json()["detail"]

        def chunks() -> object:  # no content-length: counted while it streams
            yield b'{"thread_id": "t", "metadata": {"blob": "'
            for _ in range(10):
                yield b"x" * 500
            yield b'"}}'

        streamed = client.post(
            "/threads", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413
        assert client.get("/threads/t").status_code == 404  # nothing was created
        assert client.post("/threads", json={"thread_id": "t"}).status_code == 200


def test_cors(serve: Serve) -> None:
    url = serve(cors_origins=["http://app.example"])
    with httpx.Client(base_url=url) as client:
        preflight = client.options(
            "/threads",
            headers={
                "origin": "http://app.example",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://app.example"
        other = client.get("/ok", headers={"origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    plain = serve()
    with httpx.Client(base_url=plain) as client:
        assert (
            "access-control-allow-origin"
            not in client.get("/ok", headers={"origin": "http://app.example"}).headers
        )


def test_parse_api_keys() -> None:
    text = "# keys\nk1=alice\n\nk2 = bob, k3=carol\n"
    assert parse_api_keys(text) == {"k1": "alice", "k2": "bob", "k3": "carol"}
    with pytest.raises(ConfigError, match="entry 2 is not KEY=USER"):
        parse_api_keys("k1=alice\nnonsense")
    with pytest.raises(ConfigError, match="at least one key"):
        api_keys({})


def test_ready_is_503_while_the_database_cannot_answer(tmp_path: Path) -> None:
    from tenxgraph.server import create_app
    from tenxgraph.storage.checkpointer import SqliteCheckpointer
    from tenxgraph.testing.server import served
    from tests.server.conftest import make_graph

    missing = tmp_path / "no-such-dir" / "threads.sqlite"
    with served(create_app(make_graph(SqliteCheckpointer(str(missing))))) as url:
        ready = httpx.get(f"{url}/ready")
        assert ready.status_code == 503 and "storage not ready" in ready.json()["detail"]
        assert httpx.get(f"{url}/ok").status_code == 200  # alive all the same
