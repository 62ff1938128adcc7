"""tenxgraph's own routes: direct tool calls, the whole log vs the window, media."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph, interrupt
from tenxgraph.core.state import AgentState, Message
from tenxgraph.server.auth import api_keys
from tenxgraph.storage.checkpointer import Checkpointer
from tenxgraph.storage.media import FilesystemMediaStore
from tests.server.conftest import Serve


@pytest.fixture
def client(serve: Serve) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(), timeout=10) as client:
        client.post("/threads", json={"thread_id": "t"})
        yield client


def say(client: httpx.Client, text: str) -> None:
    response = client.post(
        "/threads/t/state", json={"values": {"messages": [{"role": "user", "content": text}]}}
    )
    assert response.status_code == 200, response.text


def test_list_and_call_tools(client: httpx.Client) -> None:
    tools = client.get("/assistants/agent/tools").json()
    assert [(t["name"], sorted(t["parameters"]["properties"])) for t in tools] == [
        ("add", ["a", "b"])
    ]

    result = client.post("/threads/t/tools/add", json={"args": {"a": 2, "b": 3}, "note": "sum"})
    assert result.status_code == 200, result.text
    assert (result.json()["type"], result.json()["is_error"]) == ("tool_result", False)
    assert result.json()["output"] == 5, result.text  # the int the tool returned, as JSON
    messages = client.get("/threads/t/state").json()["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool"]  # note, call, result

    unrecorded = client.post(
        "/threads/t/tools/add", json={"args": {"a": 1, "b": 1}, "record": False}
    )
    assert unrecorded.json()["output"] == 2, unrecorded.text
    assert len(client.get("/threads/t/state").json()["values"]["messages"]) == 3

    for response, status, words in (
        (client.post("/threads/t/tools/nope", json={}), 404, "tool 'nope'"),
        (client.post("/threads/t/tools/add", json={"args": {"a": "x"}}), 422, "add"),
        (client.post("/threads/t/tools/add", json={"bogus": 1}), 422, "bogus"),
        (client.post("/threads/missing/tools/add", json={"args": {"a": 1, "b": 2}}), 404, "thread"),
    ):
        assert response.status_code == status, response.text
        assert words in response.json()["detail"], response.text


def test_whole_log_and_window(client: httpx.Client) -> None:
    for text in ("one", "two", "three"):
        say(client, text)
    log = client.get("/threads/t/messages", params={"offset": 1, "limit": 1}).json()
    assert log["log_length"] == 3
    assert [(m["seq"], m["content"][0]["text"]) for m in log["messages"]] == [(1, "two")]
    window = client.get("/threads/t/window").json()
    assert window["window"] == [[0, 3]] and len(window["messages"]) == 3
    assert window["context_summary"] is None
    assert client.get("/threads/missing/messages").status_code == 404
    assert client.get("/threads/missing/window").status_code == 404
    assert client.get("/threads/t/messages", params={"limit": 0}).status_code == 422


def _asking(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """A graph whose one node asks a question (the run pauses)."""

    def ask(state: AgentState) -> Message:
        return Message.text_message(f"answer: {interrupt('Ready?')}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("ask", ask)
    graph.set_entry_point("ask")
    return graph.compile(checkpointer)


def test_rollback_discards_an_unfinished_turn(serve: Serve) -> None:
    with httpx.Client(base_url=serve(_asking), timeout=10) as client:
        client.post("/threads", json={"thread_id": "t"})
        run = {"assistant_id": "agent", "input": {"messages": [["user", "go"]]}}
        client.post("/threads/t/runs/wait", json=run).raise_for_status()
        assert client.get("/threads/t").json()["status"] == "interrupted"

        assert client.post("/threads/t/rollback").json() == {"discarded": True}
        thread = client.get("/threads/t").json()
        assert (thread["status"], thread["values"]["messages"]) == ("idle", [])
        assert client.get("/threads/t/messages").json()["log_length"] == 0
        assert client.post("/threads/t/rollback").json() == {"discarded": False}
        assert client.post("/threads/missing/rollback").status_code == 404


def _slow(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    async def wait(state: AgentState) -> None:
        await asyncio.sleep(30)

    graph = StateGraph(AgentState)
    graph.add_node("wait", wait)
    graph.set_entry_point("wait")
    return graph.compile(checkpointer)


def test_rollback_refuses_a_thread_with_a_run_going_on(serve: Serve) -> None:
    with httpx.Client(base_url=serve(_slow), timeout=10) as client:
        client.post("/threads", json={"thread_id": "t"})
        run = client.post("/threads/t/runs", json={"assistant_id": "agent", "input": {}}).json()
        refused = client.post("/threads/t/rollback")
        assert refused.status_code == 409 and "cancel it first" in refused.json()["detail"]
        cancel = f"/threads/t/runs/{run['run_id']}/cancel"
        assert client.post(cancel, params={"wait": 1}).status_code == 204


def test_media_is_streamed_per_user(serve: Serve, tmp_path: Path) -> None:
    media = FilesystemMediaStore(tmp_path / "media")
    data = b"%PDF-1.4\n" + bytes(range(256)) * 400
    ref = media.put(data, "application/pdf", user_id="alice")
    key = ref.url.rsplit("/", 1)[-1]
    url = serve(media=media, authenticate=api_keys({"ka": "alice", "kb": "bob"}))
    with httpx.Client(base_url=url, headers={"x-api-key": "ka"}) as alice:
        got = alice.get(f"/media/{key}")
        assert got.status_code == 200 and got.content == data
        assert got.headers["content-type"] == "application/pdf"
        assert alice.get(f"/media/{'0' * 64}").status_code == 404
        assert alice.get("/media/not-a-key").status_code == 400
    with httpx.Client(base_url=url, headers={"x-api-key": "kb"}) as bob:
        assert bob.get(f"/media/{key}").status_code == 404
    with httpx.Client(base_url=serve()) as plain:
        assert plain.get(f"/media/{key}").status_code == 404


def test_media_upload_then_download(serve: Serve, tmp_path: Path) -> None:
    media = FilesystemMediaStore(tmp_path / "media", max_bytes=50_000)
    url = serve(media=media, authenticate=api_keys({"ka": "alice", "kb": "bob"}))
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 100

    def chunks() -> Iterator[bytes]:  # streamed: no content-length
        for start in range(0, len(png), 4096):
            yield png[start : start + 4096]

    with httpx.Client(base_url=url, headers={"x-api-key": "ka"}) as alice:
        put = alice.post(
            "/media",
            params={"filename": "x.png"},
            content=chunks(),
            headers={"content-type": "image/png"},
        )
        assert put.status_code == 200, put.text
        ref = put.json()
        assert (ref["mime_type"], ref["size_bytes"], ref["filename"]) == (
            "image/png",
            len(png),
            "x.png",
        )
        key = ref["url"].removeprefix("graph://media/")
        assert alice.get(f"/media/{key}").content == png
        assert media.get(ref["url"], user_id="alice") == png  # stored for the caller

        lying = alice.post("/media", content=png, headers={"content-type": "application/pdf"})
        assert lying.status_code == 422 and "pdf" in lying.json()["detail"].lower()
        big = alice.post("/media", content=b"x" * 60_000, headers={"content-type": "text/plain"})
        assert big.status_code == 413
    with httpx.Client(base_url=url, headers={"x-api-key": "kb"}) as bob:
        assert bob.get(f"/media/{key}").status_code == 404
