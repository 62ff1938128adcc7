"""``tenxgraph.client`` against a real server: uvicorn on a free port, SQLite, scripted models.

Both clients are exercised: ``Client`` (async) and ``SyncClient``, which runs
the same methods to completion. A dropped connection is real: a TCP proxy
(``proxy.py``) closes the stream's socket in the middle of a run.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import pytest

from tenxgraph.client import (
    Client,
    EndPart,
    ErrorPart,
    MessagePart,
    MetadataPart,
    RemoteToolCallPart,
    StreamPart,
    SyncClient,
    UpdatesPart,
    ValuesPart,
    messages_in,
)
from tenxgraph.core.state import Message
from tenxgraph.errors import (
    APIConflictError,
    APIConnectionError,
    APINotFoundError,
    APIStatusError,
    APIUnauthorizedError,
    RunFailedError,
)
from tenxgraph.server.auth import api_keys
from tenxgraph.testing.server import free_port
from tests.clients.conftest import AGENT, WORDS, ServeGraph, clocked, failing, slow
from tests.clients.proxy import cutting_proxy

MODES = ["values", "updates", "messages-tuple"]


def user(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


def answer_of(words: int = WORDS) -> str:
    return " ".join(f"w{i}" for i in range(words))


def test_sync_threads_create_read_search_state_and_delete(serve_graph: ServeGraph) -> None:
    with SyncClient(serve_graph()) as client:
        thread = client.threads.create(metadata={"owner": "ana"})
        thread_id = thread["thread_id"]
        client.threads.create(metadata={"owner": "bo"})
        assert client.threads.get(thread_id)["metadata"]["owner"] == "ana"
        found = client.threads.search(metadata={"owner": "ana"})
        assert [t["thread_id"] for t in found] == [thread_id]
        values = client.runs.wait(thread_id, AGENT, input=user("hi"))
        state = client.threads.get_state(thread_id)
        assert [m.role for m in state.messages] == ["user", "assistant"]
        assert isinstance(state.messages[1], Message)
        assert state.messages[1].text() == f"said: hi {answer_of()}"
        assert messages_in(values) == state.messages
        note = Message.text_message("a note", role="assistant")
        client.threads.update_state(thread_id, {"messages": [note]})
        history = client.threads.get_history(thread_id, limit=3)
        assert [m.text() for m in history[0].messages][-1] == "a note"
        assert history[1].messages == state.messages  # newest first, each one parsed
        assert history[0].checkpoint_id != history[1].checkpoint_id
        client.threads.delete(thread_id)
        with pytest.raises(APINotFoundError) as missing:
            client.threads.get(thread_id)
        assert missing.value.status == 404
        assert thread_id in missing.value.detail  # the server's detail reaches the caller


async def test_async_stream_yields_typed_parts_once_each_in_order(
    serve_graph: ServeGraph,
) -> None:
    async with Client(serve_graph()) as client:
        thread = await client.threads.create()
        parts = [
            part
            async for part in client.runs.stream(
                thread["thread_id"], AGENT, input=user("hey"), stream_mode=MODES
            )
        ]
    assert isinstance(parts[0], MetadataPart) and parts[0].run_id
    assert isinstance(parts[-1], EndPart)
    ids = [int(part.id) for part in parts if part.id is not None]
    assert ids == list(range(1, len(parts) + 1))  # every part has the next id: none lost or twice
    chunks = [p.message for p in parts if isinstance(p, MessagePart) and p.message.delta]
    assert "".join(m.text() for m in chunks) == f"said: hey {answer_of()}"
    assert any(isinstance(p, UpdatesPart) and "agent" in p.updates for p in parts)
    final = [p for p in parts if isinstance(p, ValuesPart)][-1]
    assert [m.text() for m in final.messages] == ["hey", f"said: hey {answer_of()}"]


def collect(client: SyncClient, thread_id: str, text: str) -> list[StreamPart]:
    return list(client.runs.stream(thread_id, AGENT, input=user(text), stream_mode=MODES))


def test_a_dropped_stream_resumes_with_last_event_id_and_loses_or_repeats_nothing(
    serve_graph: ServeGraph,
) -> None:
    url = serve_graph()
    with SyncClient(url) as reference_client:
        thread_id = reference_client.threads.create()["thread_id"]
        reference = collect(reference_client, thread_id, "one")
    with cutting_proxy(url, cut_after=1500, cuts=2) as proxy, SyncClient(proxy.url) as client:
        parts = collect(client, thread_id, "two")
    assert proxy.cut == 2  # the connection really dropped, twice, mid-stream
    resumed = [head for head in proxy.heads if head.startswith("GET ")]
    assert len(resumed) == 2
    assert all("last-event-id:" in head.lower() for head in resumed)
    ids = [int(part.id) for part in parts if part.id is not None]
    assert ids == list(range(1, len(parts) + 1))
    assert isinstance(parts[-1], EndPart)
    # the same run shape as without a drop: same event names in the same order
    assert [p.event for p in parts] == [p.event for p in reference]
    chunks = [p.message for p in parts if isinstance(p, MessagePart) and p.message.delta]
    assert "".join(m.text() for m in chunks) == f"said: two {answer_of()}"


async def test_the_async_client_resumes_past_a_503(serve_graph: ServeGraph) -> None:
    url = serve_graph()
    with cutting_proxy(url, cut_after=2500, cuts=1, refuse_resumes=1) as proxy:
        async with Client(proxy.url) as client:
            thread_id = "an id?#%2F"  # quoted as one path segment, the resume's path too
            stream = client.runs.stream(
                thread_id, AGENT, input=user("a"), stream_mode=MODES, if_not_exists="create"
            )
            parts = [part async for part in stream]
            assert (await client.threads.get(thread_id))["thread_id"] == thread_id
            assert (await client.info())["graph_id"] == AGENT
    assert proxy.cut == 1
    resumes = [head for head in proxy.heads if head.startswith("GET ")]
    assert len(resumes) == 2  # the first resume met a 503 (a restarting server) and was retried
    ids = [int(part.id) for part in parts if part.id is not None]
    assert ids == list(range(1, len(parts) + 1))
    chunks = [p.message for p in parts if isinstance(p, MessagePart) and p.message.delta]
    assert "".join(m.text() for m in chunks) == f"said: a {answer_of()}"


async def test_background_run_join_get_and_list(serve_graph: ServeGraph) -> None:
    async with Client(serve_graph()) as client:
        run = await client.runs.create("t-bg", AGENT, input=user("bg"), if_not_exists="create")
        assert run["status"] in ("pending", "running")
        values = await client.runs.join("t-bg", run["run_id"])
        assert [m.role for m in messages_in(values)] == ["user", "assistant"]
        assert (await client.runs.get("t-bg", run["run_id"]))["status"] == "success"
        listed = await client.runs.list("t-bg")
        assert [r["run_id"] for r in listed] == [run["run_id"]]
        joined = [p async for p in client.runs.join_stream("t-bg", run["run_id"])]
        assert isinstance(joined[0], MetadataPart) and isinstance(joined[-1], EndPart)


def wait_for(client: SyncClient, thread_id: str, run_id: str, status: str) -> None:
    deadline = time.monotonic() + 20
    while client.runs.get(thread_id, run_id)["status"] != status:
        assert time.monotonic() < deadline, f"run never became {status}"
        time.sleep(0.02)


def test_cancel_a_running_run_and_a_busy_thread_is_a_conflict(serve_graph: ServeGraph) -> None:
    with SyncClient(serve_graph(slow)) as client:
        run = client.runs.create("t-slow", AGENT, input=user("30"), if_not_exists="create")
        wait_for(client, "t-slow", run["run_id"], "running")
        with pytest.raises(APIConflictError) as busy:
            client.runs.wait("t-slow", AGENT, input=user("0"), multitask_strategy="reject")
        assert busy.value.status == 409 and "t-slow" in busy.value.detail
        client.runs.cancel("t-slow", run["run_id"], wait=True)
        assert client.runs.get("t-slow", run["run_id"])["status"] == "interrupted"
        with pytest.raises(APIConflictError, match="already ended"):
            client.runs.cancel("t-slow", run["run_id"])


def test_errors_carry_the_status_and_the_servers_detail(serve_graph: ServeGraph) -> None:
    url = serve_graph(authenticate=api_keys({"k1": "ana"}))
    with SyncClient(url) as anonymous, pytest.raises(APIUnauthorizedError) as refused:
        anonymous.threads.create()
    assert refused.value.status == 401
    with SyncClient(url, api_key="k1") as client:
        with pytest.raises(APINotFoundError, match="assistant 'nobody'"):
            client.runs.wait("t1", "nobody", input=user("x"), if_not_exists="create")
        with pytest.raises(APIStatusError) as bad:
            client.runs.wait("t1", AGENT, input={"messages": [{"role": "robot"}]})
        assert 400 <= bad.value.status < 500 and bad.value.detail
    nowhere = SyncClient(f"http://127.0.0.1:{free_port()}")
    with nowhere, pytest.raises(APIConnectionError, match="failed"):
        nowhere.threads.create()


def test_a_failed_run_raises_from_wait_and_ends_its_stream_with_an_error_part(
    serve_graph: ServeGraph,
) -> None:
    client = SyncClient(serve_graph(failing))
    with client:
        with pytest.raises(RunFailedError, match="model broke"):
            client.runs.wait("t-f", AGENT, input=user("x"), if_not_exists="create")
        parts = list(client.runs.stream("t-f", AGENT, input=user("y"), stream_mode="values"))
    assert isinstance(parts[-1], EndPart)
    error = parts[-2]
    assert isinstance(error, ErrorPart) and "model broke" in error.message and error.error


def test_remote_tool_handler_round_trip_sync(serve_graph: ServeGraph) -> None:
    seen: list[dict[str, Any]] = []

    def clock(tz: str) -> str:
        seen.append({"tz": tz})
        return f"12:00 {tz}"

    with SyncClient(serve_graph(clocked)) as client:
        thread_id = client.threads.create()["thread_id"]
        parts = list(
            client.runs.stream(thread_id, AGENT, input=user("time?"), tools={"clock": clock})
        )
        assert seen == [{"tz": "UTC"}]
        calls = [p for p in parts if isinstance(p, RemoteToolCallPart)]
        assert [c.call.name for c in calls] == ["clock"]
        assert calls[0].id is not None  # the server's own event: the run waited in the stream
        assert sum(isinstance(p, EndPart) for p in parts) == 1
        assert sum(isinstance(p, MetadataPart) for p in parts) == 1  # the same run went on
        ids = [int(part.id) for part in parts if part.id is not None]
        assert ids == list(range(1, len(parts) + 1))
        state = client.threads.get_state(thread_id)
        assert state.messages[-1].text() == "clock ok: 12:00 UTC"


async def test_remote_tool_that_raises_or_is_missing_answers_an_error(
    serve_graph: ServeGraph,
) -> None:
    async def broken(tz: str) -> str:
        raise LookupError(f"no clock for {tz}")

    async with Client(serve_graph(clocked)) as client:
        thread_id = (await client.threads.create())["thread_id"]
        tools = {"clock": broken}
        async for _ in client.runs.stream(thread_id, AGENT, input=user("a"), tools=tools):
            pass
        state = await client.threads.get_state(thread_id)
        assert state.messages[-1].text() == "clock error: LookupError: no clock for UTC"
        async for _ in client.runs.stream(thread_id, AGENT, input=user("b"), tools={}):
            pass
        state = await client.threads.get_state(thread_id)
        assert "no handler for remote tool 'clock'" in state.messages[-1].text()


async def test_without_tools_the_reader_sees_the_call_and_may_answer_it(
    serve_graph: ServeGraph,
) -> None:
    async with Client(serve_graph(clocked)) as client:
        thread_id = (await client.threads.create())["thread_id"]
        run_id, names = "", []
        async for part in client.runs.stream(thread_id, AGENT, input=user("c")):
            if isinstance(part, MetadataPart):
                run_id = part.run_id
            if isinstance(part, RemoteToolCallPart):
                names.append(part.call.name)
                result = {"call_id": part.call.id, "output": "by hand", "is_error": False}
                answer = await client.runs.tool_results(thread_id, run_id, [result])
                assert answer["accepted"] == [part.call.id]
        assert names == ["clock"]
        state = await client.threads.get_state(thread_id)
        assert state.messages[-1].text() == "clock ok: by hand"


def test_the_client_loads_httpx_on_its_first_request_only() -> None:
    probe = (
        "import sys\nfrom tenxgraph.client import Client, SyncClient\n"
        "SyncClient('http://127.0.0.1:9')\nprint('httpx' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_sync_client_works_inside_a_running_loop(serve_graph: ServeGraph) -> None:
    url = serve_graph()

    async def inside() -> str:
        with SyncClient(url) as client:  # a sync call from async code runs in a helper thread
            return str(client.runs.wait("t-l", AGENT, input=user("x"), if_not_exists="create"))

    assert "said: x" in asyncio.run(inside())
