"""Two workers (two apps over one Postgres schema and one Redis prefix, real uvicorn each).

A run held by worker A is found, followed (from a ``Last-Event-ID``), and
cancelled through worker B; a run whose worker vanished before it started is
claimed by a consumer and run.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.runs import PgRunQueue
from tenxgraph.testing.server import served

from .conftest import PG_DSN, REDIS_URL

pytestmark = [pytest.mark.postgres, pytest.mark.redis]
AGENT = "agent"


def slow_graph(schema: str, delay: float, steps: int) -> CompiledGraph[Any]:
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

    graph = StateGraph(AgentState)
    names = [f"s{i}" for i in range(steps)]
    for name in names:
        graph.add_node(name, _sleeper(name, delay))
    graph.set_entry_point(names[0])
    for first, second in itertools.pairwise(names):
        graph.add_edge(first, second)
    checkpointer = PgCheckpointer(PG_DSN, schema=schema, pool_size=4)
    return graph.compile(checkpointer, busy_timeout=10, lease_seconds=1.0)


def _sleeper(name: str, delay: float) -> Any:
    async def node(state: AgentState) -> Message:
        await asyncio.sleep(delay)
        return Message.text_message(f"{name} after {state.context[-1].text()}", role="assistant")

    return node


def worker(
    schema: str, prefix: str, delay: float = 0.15, steps: int = 8, poll_seconds: float = 0.25
) -> Any:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app

    graph = slow_graph(schema, delay, steps)
    app = create_app(graph, graph_id=AGENT)
    context = app.state.context
    assert graph.checkpointer is not None
    context.on_shutdown.append(graph.checkpointer.aclose)
    install(
        context,
        PG_DSN,
        REDIS_URL,
        schema=schema,
        prefix=prefix,
        lease_seconds=1.0,
        poll_seconds=poll_seconds,
    )
    return app


@pytest.fixture
def two(schema: str, prefix: str) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        a = stack.enter_context(served(worker(schema, prefix)))
        b = stack.enter_context(served(worker(schema, prefix)))
        yield a, b


def _events(response: httpx.Response, limit: int | None = None) -> list[tuple[int, str]]:
    got: list[tuple[int, str]] = []
    number, name = 0, ""
    for line in response.iter_lines():
        if line.startswith("id: "):
            number = int(line[4:])
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and number:
            got.append((number, name))
            if name == "end" or (limit is not None and len(got) >= limit):
                break
    return got


def _status(client: httpx.Client, thread: str, run_id: str, *wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run = client.get(f"/threads/{thread}/runs/{run_id}").json()
        if run["status"] in wanted:
            return dict(run)
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {wanted}")


def test_a_run_on_one_worker_is_followed_from_another_after_a_reconnect(
    two: tuple[str, str],
) -> None:
    a, b = two
    body = {
        "assistant_id": AGENT,
        "input": {"messages": [{"role": "user", "content": "go"}]},
        "stream_mode": ["updates", "values"],
        "if_not_exists": "create",
    }
    with httpx.Client(base_url=a, timeout=30) as on_a, httpx.Client(base_url=b, timeout=30) as on_b:
        run = on_a.post("/threads/t1/runs", json=body).json()
        path = f"/threads/t1/runs/{run['run_id']}/stream"
        with on_a.stream("GET", path) as first:
            before = _events(first, limit=4)  # the client is cut after four events
        assert [n for n, _ in before] == [1, 2, 3, 4]
        assert _status(on_b, "t1", run["run_id"], "running")["status"] == "running"
        with on_b.stream("GET", path, headers={"Last-Event-ID": "4"}) as second:
            after = _events(second)
        numbers = [n for n, _ in before + after]
        assert numbers == list(range(1, len(numbers) + 1))  # every event once, in order
        assert after[-1][1] == "end"
        assert sum(1 for _, name in after if name == "updates") >= 5
        final = _status(on_b, "t1", run["run_id"], "success")
        assert final["run_id"] == run["run_id"]
        joined = on_b.get(f"/threads/t1/runs/{run['run_id']}/join").json()
        assert joined["messages"][-1]["content"].startswith("s7 after")


def test_cancel_on_another_worker_stops_the_run_at_its_next_step(two: tuple[str, str]) -> None:
    a, b = two
    body = {
        "assistant_id": AGENT,
        "input": {"messages": [{"role": "user", "content": "go"}]},
        "if_not_exists": "create",
    }
    with httpx.Client(base_url=a, timeout=30) as on_a, httpx.Client(base_url=b, timeout=30) as on_b:
        run = on_a.post("/threads/t2/runs", json=body).json()
        _status(on_b, "t2", run["run_id"], "running")
        time.sleep(0.3)
        cancelled = on_b.post(f"/threads/t2/runs/{run['run_id']}/cancel?wait=1")
        assert cancelled.status_code == 204
        assert on_a.get(f"/threads/t2/runs/{run['run_id']}").json()["status"] == "interrupted"
        listed = on_b.get("/threads/t2/runs").json()  # worker B lists the run A held
        assert [(r["run_id"], r["status"]) for r in listed] == [(run["run_id"], "interrupted")]
        assert on_b.delete(f"/threads/t2/runs/{run['run_id']}").status_code == 204
        for _ in range(50):
            if on_a.get("/threads/t2/runs").json() == []:
                break
            time.sleep(0.05)
        assert on_a.get("/threads/t2/runs").json() == []
        state = on_b.get("/threads/t2/state").json()
        assert 2 <= len(state["values"]["messages"]) < 9  # stopped before its last step
        assert state["values"]["messages"][0]["content"] == "go"


async def test_a_run_left_by_a_vanished_worker_is_claimed_and_run(schema: str, prefix: str) -> None:
    app = worker(schema, prefix, delay=0.01, steps=2)
    queue = PgRunQueue(PG_DSN, schema=schema)
    try:
        request = {"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": None}
        record = {"assistant_id": AGENT, "created_at": "2026-01-01T00:00:00+00:00"}
        await queue.add(
            run_id="r-left",
            user_id="default",
            thread_id="t3",
            record=record,
            request={"kwargs": request},
        )
        vanished = await queue.claim(0.2)  # a worker claims it, then vanishes
        assert vanished is not None and vanished.run_id == "r-left"
        await queue.add(  # a row no worker can run: it ends as an error, once
            run_id="r-bad", user_id="default", thread_id="t4", record=record, request={}
        )
        await asyncio.sleep(0.3)  # the vanished worker's lease on t3 expires
        with served(app) as url:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                for _ in range(100):
                    run = (await client.get("/threads/t3/runs/r-left")).json()
                    if run["status"] == "success":
                        break
                    await asyncio.sleep(0.1)
                assert run["status"] == "success"
                state = (await client.get("/threads/t3/state")).json()
                bad = (await client.get("/threads/t4/runs/r-bad")).json()
        assert bad["status"] == "error"
        row = await queue.get("default", "r-bad")
        assert row is not None and row.attempts == 1 and "kwargs" in str(row.output)
        left = await queue.get("default", "r-left")
        assert left is not None and left.attempts == 2
        texts = [m["content"] for m in state["values"]["messages"]]
        assert texts == ["hi", "s0 after hi", "s1 after s0 after hi"]
    finally:
        await queue.aclose()


def test_ready_and_metrics_answer_for_the_whole_deployment(two: tuple[str, str]) -> None:
    a, b = two
    body = {
        "assistant_id": AGENT,
        "input": {"messages": [{"role": "user", "content": "go"}]},
        "if_not_exists": "create",
    }
    with httpx.Client(base_url=a, timeout=30) as on_a, httpx.Client(base_url=b, timeout=30) as on_b:
        assert on_b.get("/ready").json() == {"ok": True}
        run = on_a.post("/runs/wait", json=body)
        assert run.status_code == 200
        text = on_b.get("/metrics").text  # worker B reads the run table A wrote
        assert 'tenxgraph_runs{status="success"} 1.0' in text
        assert "tenxgraph_run_queue_depth 0.0" in text
        own = on_a.get("/metrics").text
        assert 'tenxgraph_run_seconds_count{status="success"} 1.0' in own
        assert 'tenxgraph_run_seconds_count{status="success"}' not in text


def test_background_runs_are_queued_for_any_worker_and_kept_in_order(
    two: tuple[str, str],
) -> None:
    a, b = two

    def body(text: str, **more: Any) -> dict[str, Any]:
        message = {"role": "user", "content": text}
        return {"assistant_id": AGENT, "input": {"messages": [message]}, **more}

    with httpx.Client(base_url=a, timeout=30) as on_a, httpx.Client(base_url=b, timeout=30) as on_b:
        first = on_a.post("/threads/t5/runs", json=body("one", if_not_exists="create"))
        assert first.status_code == 200 and first.json()["status"] == "pending"
        refused = on_b.post("/threads/t5/runs", json=body("two", if_not_exists="create"))
        assert refused.status_code == 409, refused.text
        second = on_b.post(
            "/threads/t5/runs",
            json=body("two", multitask_strategy="enqueue", if_not_exists="create"),
        )
        assert second.status_code == 200
        for run in (first.json(), second.json()):
            _status(on_a, "t5", run["run_id"], "success")
        state = on_b.get("/threads/t5/state").json()
        texts = [m["content"] for m in state["values"]["messages"]]
        assert texts[0] == "one" and texts[9] == "two" and len(texts) == 18  # in order, whole


def test_a_queued_run_cancelled_on_another_worker_never_starts(two: tuple[str, str]) -> None:
    a, b = two
    go = {"role": "user", "content": "go"}
    first = {"assistant_id": AGENT, "input": {"messages": [go]}, "if_not_exists": "create"}
    queued = {**first, "multitask_strategy": "enqueue"}
    with httpx.Client(base_url=a, timeout=30) as on_a, httpx.Client(base_url=b, timeout=30) as on_b:
        running = on_a.post("/threads/t6/runs", json=first).json()
        waiting = on_a.post("/threads/t6/runs", json=queued).json()
        _status(on_b, "t6", running["run_id"], "running")
        assert on_b.get(f"/threads/t6/runs/{waiting['run_id']}").json()["status"] == "pending"
        cancelled = on_b.post(f"/threads/t6/runs/{waiting['run_id']}/cancel?wait=1")
        assert cancelled.status_code == 204
        assert on_a.get(f"/threads/t6/runs/{waiting['run_id']}").json()["status"] == "interrupted"
        _status(on_b, "t6", running["run_id"], "success")
        state = on_b.get("/threads/t6/state").json()
        assert len(state["values"]["messages"]) == 9  # the first run's turn only


async def test_a_queued_run_starts_at_once_without_waiting_for_a_poll(
    schema: str, prefix: str
) -> None:
    app = worker(schema, prefix, delay=0.01, steps=2, poll_seconds=60)  # polls: 30-90 s apart
    queue = PgRunQueue(PG_DSN, schema=schema)
    body = {
        "assistant_id": AGENT,
        "input": {"messages": [{"role": "user", "content": "hi"}]},
        "if_not_exists": "create",
    }
    try:
        with served(app) as url:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                await asyncio.sleep(0.5)  # the consumers found nothing and wait
                run = (await client.post("/threads/t7/runs", json=body)).json()
                started = time.monotonic()
                while time.monotonic() - started < 10:
                    row = await queue.get("default", run["run_id"])
                    if row is not None and row.status == "success":
                        break
                    await asyncio.sleep(0.05)
        assert row is not None and row.status == "success"  # woken by NOTIFY, not a poll
    finally:
        await queue.aclose()


def test_the_runs_settings_reach_the_durable_manager(schema: str, prefix: str) -> None:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app

    runs = {"keep_finished": 9, "keep_logs": 7, "max_events": 123}
    app = create_app(slow_graph(schema, 0.0, 1), graph_id=AGENT, extra_settings={"runs": runs})
    manager = install(app.state.context, PG_DSN, REDIS_URL, schema=schema, prefix=prefix)
    assert (manager.keep_finished, manager.keep_logs) == (9, 7)
    assert manager.limits.max_events == 123
