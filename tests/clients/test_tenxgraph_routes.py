"""``tenxgraph.client`` on tenxgraph's own routes, the ones the web page uses, over real HTTP.

The whole log and the context window, the graph's tools and direct calls
(recorded and not), the rollback of an unfinished turn, the assistant
search and media: each through ``SyncClient`` or ``Client`` against uvicorn
serving a scripted-model graph over SQLite (``conftest.tooled``), and each
checked against what the server stored, read back through another route.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.client import Client, ContextWindow, LogPage, SyncClient
from tenxgraph.core.llm import ToolSpec
from tenxgraph.core.state import MediaRef, Message, ToolResultBlock
from tenxgraph.errors import (
    APIConflictError,
    APINotFoundError,
    APIStatusError,
    InvalidMediaKeyError,
    RunFailedError,
)
from tenxgraph.storage.media import FilesystemMediaStore
from tests.clients.conftest import AGENT, ServeGraph, slow, tooled


def user(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


def whole_log(client: SyncClient, thread_id: str, limit: int) -> list[LogPage]:
    pages = [client.threads.get_log(thread_id, limit=limit)]
    while (offset := pages[-1].next_offset) is not None:
        pages.append(client.threads.get_log(thread_id, offset=offset, limit=limit))
    return pages


def test_the_whole_log_pages_past_the_window_the_model_sees(serve_graph: ServeGraph) -> None:
    with SyncClient(serve_graph(tooled)) as client:
        thread_id = client.threads.create()["thread_id"]
        for text in ("one", "two", "three"):
            client.runs.wait(thread_id, AGENT, input=user(text))
        pages = whole_log(client, thread_id, limit=4)
        assert [(p.offset, p.seqs, p.log_length) for p in pages] == [
            (0, [0, 1, 2, 3], 6),
            (4, [4, 5], 6),
        ]
        logged = [m for page in pages for m in page.messages]
        assert all(isinstance(m, Message) for m in logged)
        said = ["one", "said: one", "two", "said: two", "three", "said: three"]
        assert [m.text() for m in logged] == said
        assert client.threads.get_log(thread_id, offset=6).messages == []

        window = client.threads.get_window(thread_id)
        assert isinstance(window, ContextWindow)
        assert window.log_length == 6
        assert window.window == [(4, 6)]  # the sliding window starts at the last question
        assert [m.text() for m in window.messages] == said[4:]
        assert window.messages == client.threads.get_state(thread_id).messages
        assert window.context_summary is None
        assert logged[4:] == window.messages  # the same messages, by their log positions


async def test_direct_tool_calls_recorded_and_not(serve_graph: ServeGraph) -> None:
    async with Client(serve_graph(tooled)) as client:
        tools = await client.assistants.get_tools(AGENT)
        assert [t.name for t in tools] == ["add", "divide"]
        assert isinstance(tools[0], ToolSpec)
        assert tools[0].description == "Add two integers."
        assert set(tools[0].parameters["properties"]) == {"a", "b"}

        thread_id = (await client.threads.create())["thread_id"]
        result = await client.threads.call_tool(
            thread_id, "add", {"a": 2, "b": 3}, note="the user asked for a sum"
        )
        assert isinstance(result, ToolResultBlock)
        assert (result.output, result.is_error) == (5, False)
        log = await client.threads.get_log(thread_id)
        assert [m.role for m in log.messages] == ["user", "assistant", "tool"]
        assert log.messages[0].text() == "the user asked for a sum"
        assert log.messages[2].tool_results() == [result]  # the result as recorded

        call = client.threads.call_tool
        unrecorded = await call(thread_id, "add", {"a": 1, "b": 1}, record=False)
        assert unrecorded.output == 2
        failed = await call(thread_id, "divide", {"a": 1, "b": 0}, record=False)
        assert failed.is_error and "ZeroDivisionError" in str(failed.output)
        assert (await client.threads.get_log(thread_id)).log_length == 3  # neither was recorded

        with pytest.raises(APIStatusError) as wrong:
            await client.threads.call_tool(thread_id, "add", {"a": "x"})
        assert wrong.value.status == 422 and "a" in wrong.value.detail
        with pytest.raises(APINotFoundError, match="nope"):
            await client.threads.call_tool(thread_id, "nope")
        assert (await client.threads.get_log(thread_id)).log_length == 3  # refused before a write


def test_rollback_discards_an_unfinished_turn_only(serve_graph: ServeGraph) -> None:
    with SyncClient(serve_graph(tooled)) as client:
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(thread_id, AGENT, input=user("hello"))
        assert client.threads.rollback(thread_id) is False  # a completed turn stays
        with pytest.raises(RunFailedError):
            client.runs.wait(thread_id, AGENT, input=user("break"))
        assert [m.text() for m in client.threads.get_log(thread_id).messages][-1] == "break"
        assert client.threads.rollback(thread_id) is True
        log = client.threads.get_log(thread_id)
        assert [m.text() for m in log.messages] == ["hello", "said: hello"]
        assert client.threads.get_window(thread_id).window == [(0, 2)]
        assert client.threads.rollback(thread_id) is False
        with pytest.raises(APINotFoundError):
            client.threads.rollback("no-such-thread")


async def test_rollback_while_a_run_is_on_the_thread_is_a_conflict(
    serve_graph: ServeGraph,
) -> None:
    async with Client(serve_graph(slow)) as client:
        await client.threads.create(thread_id="busy")
        run = await client.runs.create("busy", AGENT, input=user("30"))
        for _ in range(3000):  # until the run holds the thread (a minute at most)
            if (await client.runs.get("busy", run["run_id"]))["status"] == "running":
                break
            await asyncio.sleep(0.02)
        with pytest.raises(APIConflictError, match="cancel it first"):
            await client.threads.rollback("busy")
        await client.runs.cancel("busy", run["run_id"], wait=True, action="rollback")
        assert (await client.threads.get_log("busy")).log_length == 0


def test_assistant_search_finds_the_served_graph(serve_graph: ServeGraph) -> None:
    with SyncClient(serve_graph(tooled)) as client:
        found = client.assistants.search()
        assert [(a["assistant_id"], a["graph_id"]) for a in found] == [(AGENT, AGENT)]
        assert client.assistants.search(graph_id="another") == []
        with pytest.raises(APINotFoundError):
            client.assistants.get_tools("another")


def test_media_put_and_get_back(serve_graph: ServeGraph, tmp_path: Path) -> None:
    url = serve_graph(tooled, media=FilesystemMediaStore(tmp_path / "media", fsync=False))
    with SyncClient(url) as client:
        data = b"plain notes\n" * 1000
        ref = client.media.put(data, mime_type="text/plain", filename="notes.txt")
        assert isinstance(ref, MediaRef)
        assert ref.url is not None and ref.url.startswith("graph://media/")
        assert (ref.mime_type, ref.size_bytes) == ("text/plain", len(data))
        assert ref.filename == "notes.txt"
        key = ref.url.removeprefix("graph://media/")
        assert client.media.get(ref) == client.media.get(ref.url) == client.media.get(key) == data
        with pytest.raises(InvalidMediaKeyError):
            client.media.get("https://example.com/a.png")  # refused before any request
        with pytest.raises(APINotFoundError):
            client.media.get("0" * 64)
    with SyncClient(serve_graph(tooled)) as client, pytest.raises(APINotFoundError, match="media"):
        client.media.put(b"x", mime_type="text/plain")
