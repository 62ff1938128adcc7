"""A warm thread's run takes its lease with its input's save, and keeps every lease rule.

On SQLite (``saves_take_leases``) a turn on a thread the graph keeps warm
commits twice: the input with the lease, the end with its release. A thread
held by another run, or changed by another process, is found by that save,
which then writes nothing, and the run goes the usual way.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.errors import StateError, ThreadBusyError
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadStamp, ThreadWrite

CONFIG = {"thread_id": "warm"}
KEY = ThreadKey("warm")


class Recording(SqliteCheckpointer):
    """Records the separate takes of the lease and the saves that take it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[str] = []

    async def atake_thread(
        self, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None]:
        self.calls.append("take")
        return await super().atake_thread(key, owner, seconds)

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        self.calls.append("save taking" if getattr(write, "take_lease", None) else "save")
        return await super().asave(key, write)

    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        self.calls.append("release")
        await super().arelease_lease(key, owner)


def reply(state: AgentState) -> Message:
    return Message.text_message(f"reply to {state.context[-1].text()}", role="assistant")


def app_on(checkpointer: SqliteCheckpointer, *, routed: bool = False, **options: Any) -> Any:
    """One node, ``reply``, entered directly or (``routed``) through a router from START."""
    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    if routed:
        graph.add_conditional_edges("__start__", lambda state: "reply", ["reply"])
    else:
        graph.set_entry_point("reply")
    return graph.compile(checkpointer, **options)


def said(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


async def log(checkpointer: SqliteCheckpointer) -> list[str]:
    return [stored.message.text() for stored in await checkpointer.alist_messages(KEY)]


async def test_a_warm_turn_takes_its_lease_with_its_input_and_commits_twice(
    tmp_path: Path,
) -> None:
    checkpointer = Recording(tmp_path / "t.db")
    app = app_on(checkpointer)
    await app.ainvoke(said("one"), CONFIG)  # a new thread: taken first, as before
    assert checkpointer.calls == ["take", "save", "save"]
    checkpointer.calls.clear()
    statements: list[str] = []
    await app.ainvoke(said("two"), CONFIG)  # warm: opens the connection's trace below
    checkpointer._db._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    checkpointer.calls.clear()
    await app.ainvoke(said("three"), CONFIG)
    assert checkpointer.calls == ["save taking", "save"]
    assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
        "BEGIN IMMEDIATE",
        "COMMIT",
    ]
    assert statements[0] == "BEGIN IMMEDIATE"  # no statement of its own before the save
    turns = ["one", "two", "three"]
    assert await log(checkpointer) == [t for text in turns for t in (text, f"reply to {text}")]
    assert await checkpointer.atake_lease(KEY, "next", 30) is None  # given up with the end


async def test_a_warm_thread_another_run_holds_is_refused_or_waited_for(tmp_path: Path) -> None:
    checkpointer = Recording(tmp_path / "t.db")
    app = app_on(checkpointer)
    await app.ainvoke(said("one"), CONFIG)
    await app.aget_state(CONFIG)  # kept warm from this read (its first run created it)
    assert await checkpointer.atake_lease(KEY, "other", 30) is None
    before = await checkpointer.aload(KEY)
    checkpointer.calls.clear()
    with pytest.raises(ThreadBusyError, match="multitask_strategy 'enqueue'"):
        await app.ainvoke(said("refused"), CONFIG)
    assert checkpointer.calls == ["save taking", "take"]  # refused: nothing to give up
    with pytest.raises(ThreadBusyError, match="multitask_strategy"):  # the lease decides first
        await app.ainvoke({"messages": 42}, CONFIG)
    after = await checkpointer.aload(KEY)
    assert before is not None and after is not None and after.stamp == before.stamp
    assert await checkpointer.arenew_lease(KEY, "other", 30) is None  # still the other's
    waiting = asyncio.create_task(
        app.ainvoke(said("queued"), {**CONFIG, "multitask_strategy": "enqueue"})
    )
    await asyncio.sleep(0.1)
    assert not waiting.done()
    await checkpointer.arelease_lease(KEY, "other")
    await asyncio.wait_for(waiting, 5)
    assert await log(checkpointer) == ["one", "reply to one", "queued", "reply to queued"]
    with pytest.raises(StateError, match="messages"):  # free again: the input's own error
        await app.ainvoke({"messages": 42}, CONFIG)


@pytest.mark.parametrize("routed", [False, True], ids=["entry point", "routed entry"])
async def test_a_warm_copy_another_process_changed_is_read_again(
    tmp_path: Path, routed: bool
) -> None:
    here = app_on(SqliteCheckpointer(tmp_path / "t.db"), routed=routed)
    elsewhere_checkpointer = SqliteCheckpointer(tmp_path / "t.db")  # its own connection
    elsewhere = app_on(elsewhere_checkpointer, routed=routed)
    await here.ainvoke(said("one"), CONFIG)
    await elsewhere.ainvoke(said("two"), CONFIG)
    result = await here.ainvoke(said("three"), CONFIG)  # its warm copy is one turn behind
    expected = ["one", "reply to one", "two", "reply to two", "three", "reply to three"]
    assert [m.text() for m in result["state"].context] == expected
    assert await log(elsewhere_checkpointer) == expected
    stored = await elsewhere_checkpointer.aload(KEY)
    assert stored is not None and stored.version == 6


async def test_a_routed_entry_runs_its_router_with_the_lease_held(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    held: list[list[tuple[str]]] = []

    def route(state: AgentState) -> str:
        with sqlite3.connect(path) as conn:  # what another process sees
            held.append(conn.execute("SELECT owner FROM leases").fetchall())
        return "reply"

    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.add_conditional_edges("__start__", route, ["reply"])
    checkpointer = Recording(path)
    app = graph.compile(checkpointer)
    for text in ("one", "two"):
        await app.ainvoke(said(text), CONFIG)
    assert [len(owners) for owners in held] == [1, 1]
    assert checkpointer.calls == ["take", "save", "save", "take", "save", "save"]
    assert await log(checkpointer) == ["one", "reply to one", "two", "reply to two"]


async def test_a_warm_thread_with_run_hooks_takes_its_lease_first(tmp_path: Path) -> None:
    from tenxgraph.core.graph import RunHooks

    checkpointer = Recording(tmp_path / "t.db")
    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    app = graph.compile(checkpointer, hooks=[RunHooks()])
    for text in ("one", "two"):
        await app.ainvoke(said(text), CONFIG)
    assert checkpointer.calls == ["take", "save", "save"] * 2


async def test_a_warm_run_holds_its_thread_as_itself_from_its_input_on(tmp_path: Path) -> None:
    """What another process sees while a warm run's node runs: the run's lease, and the
    input's row naming the node to go on from (a crashed run continues there)."""
    path = tmp_path / "t.db"
    seen: list[tuple[list[tuple[str]], str | None]] = []

    def watched(state: AgentState) -> Message:
        with sqlite3.connect(path) as conn:
            owners = conn.execute("SELECT owner FROM leases").fetchall()
            (values,) = conn.execute('SELECT "values" FROM threads').fetchone()
        seen.append((owners, json.loads(values)["execution_meta"].get("next_node")))
        return reply(state)

    graph = StateGraph(AgentState)
    graph.add_node("reply", watched)
    graph.set_entry_point("reply")
    checkpointer = Recording(path)
    app = graph.compile(checkpointer)
    await app.ainvoke(said("one"), {**CONFIG, "run_id": "run-1"})
    await app.aget_state(CONFIG)  # kept warm from this read (its first run created it)
    await app.ainvoke(said("two"), {**CONFIG, "run_id": "run-2"})
    assert checkpointer.calls == ["take", "save", "save", "save taking", "save"]
    owners, next_node = seen[1]
    assert [owner.split("/")[0] for (owner,) in owners] == ["run-2"]
    assert next_node == "reply"
    assert await log(checkpointer) == ["one", "reply to one", "two", "reply to two"]


async def test_a_warm_run_from_a_checkpoint_takes_its_lease_first(tmp_path: Path) -> None:
    checkpointer = Recording(tmp_path / "t.db")
    app = app_on(checkpointer)
    await app.ainvoke(said("one"), CONFIG)
    await app.ainvoke(said("two"), CONFIG)
    checkpointer.calls.clear()
    await app.ainvoke(said("again"), {**CONFIG, "checkpoint_id": 2})
    assert checkpointer.calls[0] == "take"
