"""The run-stream routes' short path answers exactly as FastAPI's own handler, over real HTTP.

Each request goes to the same app twice: once as it is (plain JSON requests
take ``RunStreamRoute``'s short path), once with a dependency override set,
which sends every request through FastAPI's handler. The answers must match:
status, error detail, and a stream's events.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse
from pydantic import AfterValidator
from starlette.requests import Request

from tenxgraph.server._context import Context, User
from tenxgraph.server._run_request import RunRequest
from tenxgraph.server._run_route import RunStreamRoute, _body_model
from tenxgraph.server.app import create_app
from tenxgraph.server.auth import api_keys
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.testing.server import served
from tests.server.conftest import make_graph

JSON = {"content-type": "application/json"}
KEY = {"authorization": "Bearer key-a"}
OK = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}


def _unused() -> None:
    """A dependency no route has: overriding it only turns the short path off."""


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[tuple[FastAPI, str]]:
    graph = make_graph(SqliteCheckpointer(str(tmp_path / "runs.sqlite")))
    app = create_app(graph, graph_id="agent", authenticate=api_keys({"key-a": "alice"}))
    with served(app) as url:
        yield app, url


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The bodies ``RunRequest.model_validate_json`` was given (the short path's parse)."""
    seen: list[bytes] = []
    original = RunRequest.model_validate_json

    def counting(data: Any, **kwargs: Any) -> RunRequest:
        seen.append(data)
        return original(data, **kwargs)

    monkeypatch.setattr(RunRequest, "model_validate_json", counting)
    return seen


def _answer(response: httpx.Response) -> tuple[int, Any]:
    """Status and body; a stream as its events' names and data, ids and run ids left out."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        return response.status_code, response.text
    events = []
    for block in response.text.split("\r\n\r\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            data = json.loads(fields["data"]) if fields["event"] != "metadata" else None
            events.append((fields["event"], _without_ids(data)))
    return response.status_code, events


def _without_ids(data: Any) -> Any:
    if isinstance(data, dict):
        skip = {"run_id", "thread_id", "message_id", "id", "created_at", "timestamp"}
        return {k: _without_ids(v) for k, v in data.items() if k not in skip}
    if isinstance(data, list):
        return [_without_ids(item) for item in data]
    return data


def _both(
    app: FastAPI, url: str, send: Callable[[httpx.Client], httpx.Response]
) -> tuple[tuple[int, Any], tuple[int, Any]]:
    """The answer of the short path's app, then of FastAPI's handler alone."""
    with httpx.Client(base_url=url, timeout=30) as client:
        short = _answer(send(client))
        app.dependency_overrides[_unused] = _unused
        try:
            full = _answer(send(client))
        finally:
            app.dependency_overrides.clear()
    return short, full


CASES: list[tuple[str, dict[str, str], bytes]] = [
    ("plain run", {**JSON, **KEY}, json.dumps(OK).encode()),
    ("charset given", {"content-type": "application/json; charset=utf-8", **KEY}, b"{}"),
    (
        "charset, plain run",
        {"content-type": "application/json; charset=utf-8", **KEY},
        json.dumps(OK).encode(),
    ),
    ("malformed JSON", {**JSON, **KEY}, b"{not json"),
    ("empty body", {**JSON, **KEY}, b""),
    ("no content type", KEY, json.dumps(OK).encode()),
    ("text body", {"content-type": "text/plain", **KEY}, json.dumps(OK).encode()),
    ("+json type", {"content-type": "application/vnd.run+json", **KEY}, json.dumps(OK).encode()),
    ("field missing", {**JSON, **KEY}, b'{"input": {}}'),
    ("unknown field", {**JSON, **KEY}, json.dumps({**OK, "bogus": 1}).encode()),
    ("refused field", {**JSON, **KEY}, json.dumps({**OK, "checkpoint_id": "c"}).encode()),
    ("other assistant", {**JSON, **KEY}, json.dumps({**OK, "assistant_id": "x"}).encode()),
    ("lone surrogate", {**JSON, **KEY}, b'{"assistant_id": "agent", "input": {"x": "\\ud800"}}'),
    ("byte order mark", {**JSON, **KEY}, b"\xef\xbb\xbf" + json.dumps(OK).encode()),
    ("no key", JSON, json.dumps(OK).encode()),
    ("no key, malformed", JSON, b"{not json"),
    ("no key, refused field", JSON, json.dumps({**OK, "checkpoint_id": "c"}).encode()),
    ("wrong key", {**JSON, "authorization": "Bearer nope"}, json.dumps(OK).encode()),
]


@pytest.mark.parametrize("path", ["/runs/stream", "/threads/{new}/runs/stream"])
@pytest.mark.parametrize(("case", "headers", "body"), CASES, ids=[c[0] for c in CASES])
def test_the_short_path_answers_as_fastapi_does(
    app_url: tuple[FastAPI, str],
    parsed: list[bytes],
    path: str,
    case: str,
    headers: dict[str, str],
    body: bytes,
) -> None:
    app, url = app_url
    counter = iter(range(2))

    def send(client: httpx.Client) -> httpx.Response:
        target = path.format(new=f"t-{next(counter)}")  # a new thread each time
        if "{new}" in path:
            target_body = body.replace(b'"input"', b'"if_not_exists": "create", "input"', 1)
        else:
            target_body = body
        return client.post(target, content=target_body, headers=headers)

    short, full = _both(app, url, send)
    assert short == full
    if case in ("plain run", "charset, plain run"):
        assert short[0] == 200 and short[1][-1] == ("end", None)
        assert len(parsed) == 1  # the short path parsed it; FastAPI's handler did not


def test_both_run_stream_routes_take_the_short_path() -> None:
    from tenxgraph.server import runs

    routes = [route for route in runs.router.routes if isinstance(route, RunStreamRoute)]
    assert sorted(route.path for route in routes) == [
        "/runs/stream",
        "/threads/{thread_id}/runs/stream",
    ]
    assert all(_body_model(route) is RunRequest for route in routes)


def test_an_endpoint_taking_more_keeps_fastapis_handler() -> None:
    from fastapi import Query

    router = APIRouter(route_class=RunStreamRoute)

    @router.post("/x")
    async def extra(
        body: RunRequest, request: Request, context: Context, user: User, limit: int = Query(1)
    ) -> None:
        """Takes a query parameter the short path does not fill."""

    assert _body_model(router.routes[0]) is None  # type: ignore[arg-type]


def _typed(router: APIRouter) -> None:
    """Endpoints whose path parameter FastAPI validates into something else than the text."""

    @router.post("/int/{n}/x")
    async def number(
        n: Annotated[int, PathParam(ge=1)],
        body: RunRequest,
        request: Request,
        context: Context,
        user: User,
    ) -> JSONResponse:
        return JSONResponse({"n": n})

    @router.post("/short/{n}/x")
    async def constrained(
        n: Annotated[str, PathParam(max_length=2)],
        body: RunRequest,
        request: Request,
        context: Context,
        user: User,
    ) -> JSONResponse:
        return JSONResponse({"n": n})

    @router.post("/upper/{n}/x")
    async def validated(
        n: Annotated[str, AfterValidator(str.upper)],
        body: RunRequest,
        request: Request,
        context: Context,
        user: User,
    ) -> JSONResponse:
        return JSONResponse({"n": n})

    @router.post("/alias/{m}/x")
    async def aliased(
        n: Annotated[str, PathParam(alias="m")],
        body: RunRequest,
        request: Request,
        context: Context,
        user: User,
    ) -> JSONResponse:
        return JSONResponse({"n": n})

    @router.post("/converted/{n:int}/x")
    async def converted(
        n: str, body: RunRequest, request: Request, context: Context, user: User
    ) -> JSONResponse:
        return JSONResponse({"n": n})


def test_a_path_parameter_fastapi_validates_keeps_fastapis_handler(tmp_path: Path) -> None:
    router = APIRouter(route_class=RunStreamRoute)
    _typed(router)
    assert [_body_model(route) for route in router.routes] == [None] * 5  # type: ignore[arg-type]

    app = create_app(
        make_graph(SqliteCheckpointer(str(tmp_path / "typed.sqlite"))), graph_id="agent"
    )
    app.include_router(router)
    answers = {}
    with served(app) as url:
        for path in ("/int/5/x", "/int/-3/x", "/int/abc/x", "/short/abc/x", "/upper/ab/x"):
            short, full = _both(app, url, lambda client, path=path: client.post(path, json=OK))
            assert short == full
            answers[path] = short
    assert answers["/int/5/x"] == (200, '{"n":5}')
    assert answers["/upper/ab/x"] == (200, '{"n":"AB"}')
    assert [answers[p][0] for p in ("/int/-3/x", "/int/abc/x", "/short/abc/x")] == [422] * 3


def _deny() -> None:
    """An including router's dependency: an authorization check that refuses everyone."""
    raise HTTPException(403, "refused where the runs router is included")


@pytest.mark.parametrize("variable", ["present", "missing"])
def test_an_including_routers_dependencies_and_prefix_hold_on_both_routes(
    tmp_path: Path, parsed: list[bytes], monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """The short path sees what an inclusion adds, or stays off where it cannot (fail closed)."""
    from tenxgraph.server import _run_route, runs

    if variable == "missing":  # a FastAPI without its private _effective_route_context_var
        monkeypatch.setattr(_run_route, "fastapi_routing", SimpleNamespace())
    graph = make_graph(SqliteCheckpointer(str(tmp_path / "included.sqlite")))
    app = create_app(graph, graph_id="agent")
    app.include_router(runs.router, prefix="/refused", dependencies=[Depends(_deny)])
    app.include_router(runs.router, prefix="/tenants/{tenant}")  # the endpoints take no tenant
    thread = {**OK, "if_not_exists": "create"}
    with served(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        refused = [
            client.post("/refused/runs/stream", json=OK),
            client.post("/refused/threads/t-1/runs/stream", json=thread),
        ]
        served_ = [
            client.post("/tenants/acme/runs/stream", json=OK),
            client.post("/tenants/acme/threads/t-2/runs/stream", json=thread),
        ]
    assert [_answer(answer) for answer in refused] == [
        (403, '{"detail":"refused where the runs router is included"}')
    ] * 2
    for answer in served_:
        status, events = _answer(answer)
        assert status == 200 and events[-1] == ("end", None)
    assert len(parsed) == (2 if variable == "present" else 0)  # the prefixed ones, short


def test_the_run_stream_routes_keep_their_openapi_entries(app_url: tuple[FastAPI, str]) -> None:
    _, url = app_url
    spec = httpx.get(f"{url}/openapi.json").json()
    for path in ("/runs/stream", "/threads/{thread_id}/runs/stream"):
        body = spec["paths"][path]["post"]["requestBody"]
        assert body["required"] is True
        assert body["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/RunRequest"
        }
    assert "assistant_id" in spec["components"]["schemas"]["RunRequest"]["properties"]
    assert "/threads/{thread_id}/runs/{run_id}/tool_results" in spec["paths"]


def test_a_chunked_body_over_the_limit_is_a_413_on_the_short_path_too(tmp_path: Path) -> None:
    graph = make_graph(SqliteCheckpointer(str(tmp_path / "limit.sqlite")))
    app = create_app(graph, graph_id="agent", max_body_bytes=2000)

    def chunks() -> Iterator[bytes]:  # no content-length: counted while it streams
        yield b'{"assistant_id": "agent", "metadata": {"blob": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}}'

    def send(client: httpx.Client) -> httpx.Response:
        return client.post("/runs/stream", content=chunks(), headers=JSON)

    with served(app) as url:
        short, full = _both(app, url, send)
    assert short == full
    assert short[0] == 413 and "2000 bytes" in short[1]


def test_a_fastapi_without_telemetry_serves_the_runs_through_its_own_handler() -> None:
    """FastAPI 0.115, which the server extra allows, has no ``fastapi.telemetry``."""
    script = textwrap.dedent(
        """
        import sys
        import fastapi.routing
        telemetry = sys.modules["fastapi.telemetry"]
        sys.modules["fastapi.telemetry"] = None  # importing it fails, as on FastAPI 0.115
        from tenxgraph.server import _run_route
        sys.modules["fastapi.telemetry"] = telemetry  # for FastAPI's own use
        import httpx
        from tenxgraph.server._run_request import RunRequest
        from tenxgraph.server.app import create_app
        from tenxgraph.storage.checkpointer import InMemoryCheckpointer
        from tenxgraph.testing.server import served
        from tests.server.conftest import make_graph

        parsed = []
        original = RunRequest.model_validate_json
        RunRequest.model_validate_json = lambda data, **kw: parsed.append(data) or original(data)
        app = create_app(make_graph(InMemoryCheckpointer()), graph_id="agent")
        body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
        with served(app) as url:
            answer = httpx.post(f"{url}/runs/stream", json=body, timeout=30)
        print(answer.status_code, answer.text.endswith("event: end\\r\\ndata: null\\r\\n\\r\\n"))
        print(_run_route._CHECKS, len(parsed))
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "200 True\nFalse 0\n", "")
