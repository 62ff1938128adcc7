"""Requests about a run that reach a worker other than the one holding it (two uvicorn apps).

Browser-side tool results posted to worker B reach the run waiting on
worker A (with or without Redis: Postgres carries them); a ``reject`` run on
a thread busy in the other worker is a 409 before it starts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, RemoteTool, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.runs import PgRunQueue
from tenxgraph.testing.server import served
from tests.server.test_stream_resume import sse

from .conftest import PG_DSN, REDIS_URL
from .test_two_workers import AGENT, slow_graph

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def locating_graph(schema: str) -> CompiledGraph[Any]:
    """The model calls the browser's ``get_location`` once (call ``c0``), then answers."""
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

    tool = RemoteTool(
        "get_location",
        "The user's location, from the browser.",
        {"type": "object", "properties": {}},
        timeout=60,
    )
    call = ToolCallBlock(id="c0", name="get_location", args={})
    model = ScriptedModel([Message(role="assistant", content=[call]), "Found you."])
    checkpointer = PgCheckpointer(PG_DSN, schema=schema, pool_size=4)
    return create_agent(model, [tool], checkpointer=checkpointer)


def app_of(graph: CompiledGraph[Any], schema: str, prefix: str, redis: str | None) -> Any:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app

    app = create_app(graph, graph_id=AGENT)
    context = app.state.context
    assert graph.checkpointer is not None
    context.on_shutdown.append(graph.checkpointer.aclose)
    install(context, PG_DSN, redis, schema=schema, prefix=prefix, lease_seconds=1.0)
    return app


@pytest.fixture(params=[REDIS_URL, None], ids=["redis", "postgres-only"])
def locating(request: Any, schema: str, prefix: str) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        apps = [app_of(locating_graph(schema), schema, prefix, request.param) for _ in "ab"]
        yield stack.enter_context(served(apps[0])), stack.enter_context(served(apps[1]))


def _ask() -> dict[str, Any]:
    message = {"role": "user", "content": "where am I?"}
    return {
        "assistant_id": AGENT,
        "input": {"messages": [message]},
        "stream_mode": ["updates"],
        "if_not_exists": "create",
    }


def test_tool_results_posted_to_another_worker_reach_the_run(locating: tuple[str, str]) -> None:
    a, b = locating
    with (
        httpx.Client(base_url=a, timeout=30) as on_a,
        httpx.Client(base_url=b, timeout=30) as on_b,
        on_a.stream("POST", "/threads/x1/runs/stream", json=_ask()) as response,
    ):
        events = sse(response)
        seen = []
        for event in events:
            seen.append(event)
            if event["event"] == "remote_tool_call":
                break
        run_id = seen[0]["data"]["run_id"]
        path = f"/threads/x1/runs/{run_id}/tool_results"
        wrong = on_b.post(path, json={"results": [{"call_id": "nope", "output": 1}]})
        assert wrong.status_code == 422, wrong.text  # the holder's own check, through B
        assert "'nope' is not waiting" in wrong.json()["detail"]
        assert "c0" in wrong.json()["detail"]
        elsewhere = on_b.post(f"/threads/x1/runs/{run_id}x/tool_results", json={"call_id": "c0"})
        assert elsewhere.status_code == 404
        posted = on_b.post(path, json={"results": [{"call_id": "c0", "output": {"city": "Oslo"}}]})
        assert posted.status_code == 200, posted.text
        assert posted.json() == {"run_id": run_id, "accepted": ["c0"], "pending": []}
        rest = list(events)  # the run on A goes on
    assert rest[-1]["event"] == "end"
    assert [next(iter(e["data"])) for e in rest if e["event"] == "updates"] == ["tools", "agent"]
    with httpx.Client(base_url=b, timeout=30) as on_b:
        values = on_b.get(f"/threads/x1/runs/{run_id}/join").json()
        assert values["messages"][-1]["content"] == "Found you."
        assert json.loads(values["messages"][-2]["content"]) == {"city": "Oslo"}  # a tool message
        late = on_b.post(path, json={"call_id": "c0", "output": 1})
        assert late.status_code == 409, late.text


async def test_results_for_a_holder_that_does_not_answer_are_a_504(
    schema: str, prefix: str
) -> None:
    app = app_of(locating_graph(schema), schema, prefix, None)
    app.state.context.state["runs"].relay.wait_seconds = 0.5
    queue = PgRunQueue(PG_DSN, schema=schema)
    try:
        with served(app) as url:
            record = {"assistant_id": AGENT, "created_at": "2026-01-01T00:00:00+00:00"}
            await queue.add(
                run_id="r-stuck",
                user_id="default",
                thread_id="x2",
                record=record,
                request={"kwargs": {}},
                run_after=60,  # no consumer of the app claims it
            )  # a run held by a worker that stopped answering (lease still on):
            assert (await queue.take("r-stuck", ThreadKey("x2"), "r-stuck/1", 60))[0] is None
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                started = time.monotonic()
                answer = await client.post(
                    "/threads/x2/runs/r-stuck/tool_results", json={"call_id": "c0", "output": 1}
                )
        assert answer.status_code == 504, answer.text
        assert "nothing was applied" in answer.json()["detail"]
        assert 0.5 <= time.monotonic() - started < 5
        assert await queue.mail.take(["r-stuck"]) == []  # withdrawn, then dropped: never applied
    finally:
        await queue.aclose()


@pytest.fixture
def slow_two(schema: str, prefix: str) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        apps = [app_of(slow_graph(schema, 0.15, 8), schema, prefix, REDIS_URL) for _ in "ab"]
        yield stack.enter_context(served(apps[0])), stack.enter_context(served(apps[1]))


def test_a_reject_run_on_a_thread_busy_in_another_worker_is_a_409_before_it_starts(
    slow_two: tuple[str, str], schema: str
) -> None:
    import psycopg

    a, b = slow_two
    go = {"role": "user", "content": "go"}
    first = {"assistant_id": AGENT, "input": {"messages": [go]}, "if_not_exists": "create"}
    second = {**first, "input": {"messages": [{"role": "user", "content": "two"}]}}
    with (
        httpx.Client(base_url=a, timeout=30) as on_a,
        httpx.Client(base_url=b, timeout=30) as on_b,
        on_a.stream("POST", "/threads/x3/runs/stream", json=first) as running,
    ):
        events = sse(running)
        run_id = next(events)["data"]["run_id"]
        time.sleep(0.2)  # its row is written and it runs on A
        waited = on_b.post("/threads/x3/runs/wait", json=second)
        assert waited.status_code == 409, waited.text
        assert "pending or running" in waited.json()["detail"]
        streamed = on_b.post("/threads/x3/runs/stream", json=second)
        assert streamed.status_code == 409, streamed.text
        with psycopg.connect(PG_DSN) as conn:
            rows = conn.execute(
                f'SELECT run_id FROM "{schema}".server_runs WHERE thread_id = %s', ["x3"]
            ).fetchall()
        assert rows == [(run_id,)]  # neither refused run was started nor recorded
        assert list(events)[-1]["event"] == "end"
    with httpx.Client(base_url=b, timeout=30) as on_b:
        after = on_b.post("/threads/x3/runs/wait", json=second)  # the thread is free again
        assert after.status_code == 200, after.text
        texts = [m["content"] for m in after.json()["messages"]]
        assert texts[0] == "go" and texts[9] == "two" and len(texts) == 18


def test_without_redis_a_follower_on_another_worker_is_told_and_the_stream_ends(
    schema: str, prefix: str
) -> None:
    """The run is held by one worker (any: a queued run is claimed by whichever is free)."""
    with ExitStack() as stack:
        urls = [
            stack.enter_context(served(app_of(slow_graph(schema, 0.1, 4), schema, prefix, None)))
            for _ in "ab"
        ]
        go = {"assistant_id": AGENT, "input": {"messages": [{"role": "user", "content": "go"}]}}
        with httpx.Client(base_url=urls[0], timeout=30) as on_a:
            run = on_a.post("/threads/x9/runs", json={**go, "if_not_exists": "create"}).json()
        path = f"/threads/x9/runs/{run['run_id']}"
        seen = {}
        for url in urls:
            with httpx.Client(base_url=url, timeout=30) as client:
                with client.stream("GET", f"{path}/stream") as followed:
                    assert followed.status_code == 200
                    seen[url] = list(sse(followed))
                joined = client.get(f"{path}/join")  # the outcome is had on either worker
                assert joined.status_code == 200, joined.text
                assert client.get(path).json()["status"] == "success"
        told = [events for events in seen.values() if events[0]["event"] == "error"]
        held = [events for events in seen.values() if events[0]["event"] == "metadata"]
        assert len(told) == len(held) == 1, seen
        assert [e["event"] for e in told[0]] == ["error", "end"]
        assert told[0][0]["data"]["error"] == "EventsUnavailable"
        assert "without Redis" in told[0][0]["data"]["message"]
        assert held[0][-1]["event"] == "end"
