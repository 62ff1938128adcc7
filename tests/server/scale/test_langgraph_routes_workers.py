"""LangGraph's thread stream, rollback and batches across two workers (the durable run table).

Worker A runs what it is asked; worker B answers for it: a run rolled back
through B is gone on both at once, B's thread stream follows runs held by
A (through Redis), and a batch posted to A is joined through B.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tenxgraph.testing.server import served
from tests.clients.langgraph.graph import GRAPH_ID, build
from tests.server.test_langgraph_routes import events, until_done, user

from .conftest import PG_DSN, REDIS_URL

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

RUN = {"assistant_id": GRAPH_ID}


def _app(schema: str, prefix: str) -> Any:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

    checkpointer = PgCheckpointer(PG_DSN, schema=schema, pool_size=4)
    app = create_app(build(checkpointer), graph_id=GRAPH_ID)
    context = app.state.context
    context.on_shutdown.append(checkpointer.aclose)
    install(context, PG_DSN, REDIS_URL, schema=schema, prefix=prefix, lease_seconds=1.0)
    return app


@pytest.fixture
def workers(schema: str, prefix: str) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    with ExitStack() as stack:
        urls = [stack.enter_context(served(_app(schema, prefix))) for _ in "ab"]
        clients = [stack.enter_context(httpx.Client(base_url=u, timeout=60)) for u in urls]
        yield clients[0], clients[1]


def _thread(client: httpx.Client) -> str:
    thread_id: str = client.post("/threads", json={}).json()["thread_id"]
    return thread_id


def test_a_run_rolled_back_through_another_worker_is_gone_on_both(
    workers: tuple[httpx.Client, httpx.Client],
) -> None:
    a, b = workers
    thread_id = _thread(a)
    with a.stream(
        "POST", f"/threads/{thread_id}/runs/stream", json={**RUN, "input": user("sleep 30")}
    ) as response:
        run_id = next(events(response))["data"]["run_id"]  # held by A: it streams it
        for _ in range(400):  # A writes the run's row a moment after its first event: B waits
            if b.get(f"/threads/{thread_id}/runs/{run_id}").json().get("status") == "running":
                break
            time.sleep(0.05)
        cancelled = b.post(f"/threads/{thread_id}/runs/{run_id}/cancel?action=rollback")
        assert cancelled.status_code == 202, cancelled.text
    assert b.get(f"/threads/{thread_id}/runs/{run_id}").status_code == 404
    assert b.get(f"/threads/{thread_id}/runs").json() == []
    for _ in range(200):  # the holder forgets it once it discarded the turn, a moment later
        if a.get(f"/threads/{thread_id}/runs/{run_id}").status_code == 404:
            break
        time.sleep(0.05)
    assert a.get(f"/threads/{thread_id}/runs/{run_id}").status_code == 404
    assert a.get(f"/threads/{thread_id}/runs").json() == []
    assert a.get(f"/threads/{thread_id}/state").json()["values"]["messages"] == []


def test_the_thread_stream_follows_another_workers_runs(
    workers: tuple[httpx.Client, httpx.Client],
) -> None:
    a, b = workers
    thread_id = _thread(a)
    a.post(f"/threads/{thread_id}/runs/wait", json={**RUN, "input": user("first")})
    stream = f"/threads/{thread_id}/stream"
    with b.stream("GET", stream, headers={"Last-Event-ID": "-"}) as response:
        followed = events(response)
        first = until_done(followed)
        assert first[-1]["data"]["status"] == "success"
        a.post(f"/threads/{thread_id}/runs/wait", json={**RUN, "input": user("second")})
        second = until_done(followed)
    assert second[0]["data"]["run_id"] != first[0]["data"]["run_id"]
    assert any(e["event"] == "values" for e in second)


def test_a_batch_on_one_worker_is_joined_on_the_other(
    workers: tuple[httpx.Client, httpx.Client],
) -> None:
    a, b = workers
    thread_id = _thread(a)
    batch = [{**RUN, "thread_id": thread_id, "input": user("one")}, {**RUN, "input": user("two")}]
    runs = a.post("/runs/batch", json=batch).json()
    for run in runs:
        joined = b.get(f"/threads/{run['thread_id']}/runs/{run['run_id']}/join").json()
        assert len(joined["messages"]) == 2, joined
    metadata = b.get(f"/threads/{thread_id}").json()["metadata"]
    assert metadata == {"graph_id": GRAPH_ID, "assistant_id": GRAPH_ID}
