"""A thread deleted and re-created by another writer is never mistaken for the one a graph holds.

Graph A keeps a thread warm (or is mid-run on it); worker B deletes the
thread and saves it again up to the very version A holds (ABA). A must not
reuse its state: its next run reloads and sees B's messages only, and a run
caught in the middle loses its compare-and-swap and writes nothing. No
message of either writer is lost or put in the wrong place. Runs on every
backend of the storage conformance suite.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.errors import ConflictError
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer, ThreadWrite
from tests.storage.conftest import MakeCheckpointer

CONFIG = {"thread_id": "aba", "user_id": "alice"}
KEY = ThreadKey("aba", "alice")


class Writer:
    """A graph whose one node answers ``<name>: <last text>`` and records what it was shown."""

    def __init__(self, name: str, checkpointer: Checkpointer) -> None:
        self.name = name
        self.seen: list[list[str]] = []
        self.gate: asyncio.Event | None = None
        """While set, the node waits for it after recording what it was shown."""
        self.entered = asyncio.Event()
        graph: StateGraph[AgentState] = StateGraph(AgentState)
        graph.add_node("reply", self.reply)
        graph.set_entry_point("reply")
        self.app: Any = graph.compile(checkpointer)

    async def reply(self, state: AgentState) -> list[Message]:
        self.seen.append([m.text() for m in state.context])  # what a model would be sent
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        return [Message.text_message(f"{self.name}: {state.context[-1].text()}", role="assistant")]

    async def turn(self, text: str) -> None:
        await self.app.ainvoke({"messages": [("user", text)]}, CONFIG)


def second_worker(checkpointer: Checkpointer, make_checkpointer: MakeCheckpointer) -> Checkpointer:
    """Worker B's own checkpointer on the same storage (memory can only share the instance)."""
    if isinstance(checkpointer, InMemoryCheckpointer):
        return checkpointer
    return make_checkpointer()


async def stored_texts(checkpointer: Checkpointer) -> tuple[list[str], list[str]]:
    """The thread's whole log and its context, as texts."""
    log = [m.message.text() for m in await checkpointer.alist_messages(KEY)]
    stored = await checkpointer.aload(KEY)
    assert stored is not None
    return log, [m.text() for m in stored.context]


async def test_a_warm_thread_recreated_to_the_same_version_is_reloaded(
    make_checkpointer: MakeCheckpointer,
) -> None:
    checkpointer = make_checkpointer()
    a = Writer("A", checkpointer)
    b = Writer("B", second_worker(checkpointer, make_checkpointer))
    await a.turn("a1")
    await a.app.aget_state(CONFIG)  # read: kept warm (the run that created it did not keep it)
    held = a.app.warm.take(KEY)
    assert held is not None  # A keeps the thread warm...
    a.app.warm.keep(held)
    await b.app.checkpointer.adelete_thread(KEY)
    await b.turn("b1")
    await b.app.aget_state(CONFIG)
    stamp = await checkpointer.aversion(KEY)
    assert stamp is not None and stamp.version == held.version  # ...at the version B reached
    assert stamp.incarnation != held.incarnation
    await a.turn("a2")
    assert a.seen[-1] == ["b1", "B: b1", "a2"]  # reloaded: nothing of the deleted thread
    log, context = await stored_texts(checkpointer)
    assert log == ["b1", "B: b1", "a2", "A: a2"]
    assert context == log
    await b.turn("b2")  # and B, holding its own warm copy, sees A's turn
    assert b.seen[-1] == ["b1", "B: b1", "a2", "A: a2", "b2"]
    assert (await stored_texts(checkpointer))[0] == [*log, "b2", "B: b2"]


async def test_a_run_whose_thread_is_recreated_meanwhile_writes_nothing(
    make_checkpointer: MakeCheckpointer,
) -> None:
    checkpointer = make_checkpointer()
    a = Writer("A", checkpointer)
    await a.turn("a1")
    a.gate, a.entered = asyncio.Event(), asyncio.Event()
    running = asyncio.create_task(a.turn("a2"))
    await asyncio.wait_for(a.entered.wait(), 30)  # A is inside its node, holding the thread
    held = await checkpointer.aversion(KEY)
    assert held is not None
    other = second_worker(checkpointer, make_checkpointer)
    await other.adelete_thread(KEY)
    incarnation = None
    for version in range(held.version):  # B re-creates the thread up to A's version
        write = ThreadWrite(version, [Message.text_message(f"b{version}")], {}, [], "b", version)
        write.expected_incarnation = incarnation
        incarnation, _ = await other.asave(KEY, write)
    assert (await checkpointer.aversion(KEY)) == (incarnation, held.version)
    before = await stored_texts(checkpointer)
    a.gate.set()
    with pytest.raises(ConflictError, match="deleted and re-created"):
        await running
    assert await stored_texts(checkpointer) == before  # nothing of A's run was written
    assert before[0] == [f"b{version}" for version in range(held.version)]
    a.gate = None
    await a.turn("a3")  # A's next run starts from B's thread
    assert a.seen[-1] == ["a3"]  # B's window was empty
    assert (await stored_texts(checkpointer))[0] == [*before[0], "a3", "A: a3"]
