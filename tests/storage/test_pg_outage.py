"""Runs in flight while a private Postgres is stopped and started again (issue 31).

An outage shorter than ``outage_timeout`` delays a run: its save waits for
the server and the run goes on from its last saved step. A longer one fails
the run with a ``StorageUnavailableError`` that says for how long Postgres
was unreachable. The shared server on 5432 is never touched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from tenxgraph.core.graph import RunResult, StateGraph, UpdateEvent
from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import NodeError, StorageUnavailableError
from tenxgraph.storage.checkpointer import PgCheckpointer
from tests.storage.servers import PrivatePostgres

pytestmark = pytest.mark.slow

OUTAGE = 3.0
"""Seconds the server stays down in the tests that outlast it."""


@pytest.fixture
async def store(
    private_postgres: PrivatePostgres, pg_schema: str
) -> AsyncIterator[Callable[..., PgCheckpointer]]:
    """``make(**options)``: checkpointers on the private server, in the test's own schema."""
    made: list[PgCheckpointer] = []

    def make(**options: Any) -> PgCheckpointer:
        options.setdefault("connect_timeout", 2.0)
        made.append(PgCheckpointer(private_postgres.dsn, schema=pg_schema, **options))
        return made[-1]

    yield make
    if not private_postgres.running:
        private_postgres.start()
    for checkpointer in made:
        await checkpointer.aclose()
    import psycopg

    async with await psycopg.AsyncConnection.connect(private_postgres.dsn, autocommit=True) as c:
        await c.execute(f'DROP SCHEMA IF EXISTS "{pg_schema}" CASCADE')


class Gate:
    """A node that says when it started, then waits to be let through and does ``then``."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()
        self.then: Callable[[], Message] = lambda: Message.text_message("worked", role="assistant")

    async def node(self, state: AgentState) -> Message:
        self.entered.set()
        await self.open.wait()
        return self.then()


def gated_app(checkpointer: PgCheckpointer, gate: Gate, **options: Any) -> Any:
    async def after(state: AgentState) -> Message:
        return Message.text_message("after", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("work", gate.node)
    graph.add_node("after", after)
    graph.set_entry_point("work")
    graph.add_edge("work", "after")
    return graph.compile(checkpointer, **options)


def said(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


async def stopped(server: PrivatePostgres) -> None:
    await asyncio.to_thread(server.stop)


async def started(server: PrivatePostgres) -> None:
    await asyncio.to_thread(server.start)


async def stored_texts(checkpointer: PgCheckpointer, thread: str) -> list[str]:
    return [m.message.text() for m in await checkpointer.alist_messages(ThreadKey(thread))]


async def outage_at_node_end(
    server: PrivatePostgres, gate: Gate, run: Awaitable[Any], seconds: float
) -> asyncio.Task[Any]:
    """Start ``run``; once its node waits, stop the server, let the node end; restart it later."""
    task = asyncio.ensure_future(run)
    await asyncio.wait_for(gate.entered.wait(), 30)
    await stopped(server)
    gate.open.set()  # the node returns now: its save meets the outage
    await asyncio.sleep(seconds)
    await started(server)
    return task


async def test_a_save_that_meets_a_short_outage_waits_and_the_run_completes(
    store: Callable[..., PgCheckpointer], private_postgres: PrivatePostgres
) -> None:
    checkpointer = store()
    gate = Gate()
    app = gated_app(checkpointer, gate)
    config = {"thread_id": "in-flight"}
    task = await outage_at_node_end(private_postgres, gate, app.ainvoke(said("go"), config), OUTAGE)
    back = time.monotonic()
    result = await asyncio.wait_for(task, 60)
    print(f"\nrun ended {time.monotonic() - back:.3f}s after Postgres was back ({OUTAGE:g}s down)")
    assert [m.text() for m in result["state"].context] == ["go", "worked", "after"]
    assert result["state"].execution_meta.status == "completed"
    assert await stored_texts(checkpointer, "in-flight") == ["go", "worked", "after"]
    fresh = gated_app(store(), Gate())  # another process's view agrees
    saved = await fresh.aget_state(config)
    assert saved.execution_meta.status == "completed"
    assert [m.text() for m in saved.context] == ["go", "worked", "after"]
    started_at = time.monotonic()  # the lease went with the last save: the thread is free
    again = await asyncio.wait_for(app.ainvoke(said("again"), config), 30)  # 'reject'
    assert again["state"].execution_meta.status == "completed"
    assert time.monotonic() - started_at < 10


async def test_a_streamed_run_across_an_outage_streams_what_is_stored(
    store: Callable[..., PgCheckpointer], private_postgres: PrivatePostgres
) -> None:
    checkpointer = store()
    gate = Gate()
    app = gated_app(checkpointer, gate)
    config = {"thread_id": "streamed"}

    async def follow() -> list[Any]:
        return [event async for event in app.astream(said("go"), config)]

    task = await outage_at_node_end(private_postgres, gate, follow(), OUTAGE)
    events = await asyncio.wait_for(task, 60)
    updates = [e.node for e in events if isinstance(e, UpdateEvent)]
    assert updates == ["work", "after"]  # each step once, none lost to the wait
    last = events[-1]
    assert isinstance(last, RunResult)
    assert last.state.execution_meta.status == "completed"
    assert ["go", *(m.text() for m in last.messages)] == await stored_texts(
        checkpointer, "streamed"
    )
    saved = await gated_app(store(), Gate()).aget_state(config)
    assert saved.execution_meta.status == "completed"


async def test_a_node_failing_during_an_outage_saves_its_error_and_frees_the_thread(
    store: Callable[..., PgCheckpointer], private_postgres: PrivatePostgres
) -> None:
    """Once a run that failed with Postgres down: its thread stayed held ~24 s after recovery."""
    checkpointer = store()
    gate = Gate()

    def fail() -> Message:
        raise ValueError("the node's own failure")

    gate.then = fail
    app = gated_app(checkpointer, gate)
    config = {"thread_id": "failing"}
    task = await outage_at_node_end(private_postgres, gate, app.ainvoke(said("go"), config), OUTAGE)
    with pytest.raises(NodeError, match="the node's own failure"):
        await asyncio.wait_for(task, 60)
    saved = await gated_app(store(), Gate()).aget_state(config)
    assert saved.execution_meta.status == "error"
    gate.then = lambda: Message.text_message("worked", role="assistant")
    other = gated_app(store(), gate)  # another process, 'reject': the thread must be free
    result = await asyncio.wait_for(other.ainvoke(None, config), 30)  # retries the turn
    assert [m.text() for m in result["state"].context] == ["go", "worked", "after"]


async def test_a_run_started_during_an_outage_waits_for_the_server(
    store: Callable[..., PgCheckpointer], private_postgres: PrivatePostgres
) -> None:
    checkpointer = store()
    gate = Gate()
    gate.open.set()
    app = gated_app(checkpointer, gate)
    config = {"thread_id": "starting"}
    await app.ainvoke(said("before"), config)  # the store has reached the server
    await stopped(private_postgres)
    task = asyncio.ensure_future(app.ainvoke(said("during"), config))  # takes the lease first
    await asyncio.sleep(OUTAGE)
    assert not task.done()
    await started(private_postgres)
    result = await asyncio.wait_for(task, 60)
    assert [m.text() for m in result["state"].context][-3:] == ["during", "worked", "after"]
    assert await stored_texts(checkpointer, "starting") == [
        *("before", "worked", "after"),
        *("during", "worked", "after"),
    ]


async def test_an_outage_longer_than_the_bound_fails_the_run_saying_for_how_long(
    store: Callable[..., PgCheckpointer], private_postgres: PrivatePostgres
) -> None:
    checkpointer = store(outage_timeout=1.5, connect_timeout=1.0)
    gate = Gate()
    app = gated_app(checkpointer, gate)
    config = {"thread_id": "too-long"}
    task = asyncio.ensure_future(app.ainvoke(said("go"), config))
    await asyncio.wait_for(gate.entered.wait(), 30)
    await stopped(private_postgres)
    began = time.monotonic()
    gate.open.set()
    with pytest.raises(StorageUnavailableError) as raised:
        await asyncio.wait_for(task, 60)
    elapsed = time.monotonic() - began
    print(f"\nrun failed {elapsed:.2f}s into an outage (outage_timeout 1.5s)")
    assert "unreachable for" in str(raised.value)
    assert "(outage_timeout 1.5s)" in str(raised.value)
    assert "\n" not in str(raised.value)
    # the bound, one attempt (connect_timeout), then the end's save and release fail at once
    assert 1.5 <= elapsed < 1.5 + 1.0 + 3.0
    await started(private_postgres)
    assert await stored_texts(checkpointer, "too-long") == ["go"]  # the input's save, only


async def test_outage_timeout_zero_fails_at_once(
    store: Callable[..., PgCheckpointer], private_postgres: PrivatePostgres
) -> None:
    checkpointer = store(outage_timeout=0)
    await checkpointer.aversion(ThreadKey("t"))
    await stopped(private_postgres)
    began = time.monotonic()
    with pytest.raises(StorageUnavailableError, match="unavailable"):
        await checkpointer.aversion(ThreadKey("t"))
    assert time.monotonic() - began < 2.0 + 1.0
