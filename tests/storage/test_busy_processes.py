"""Many processes append turns to one thread: each strategy keeps the stored log whole.

N processes (spawned, so nothing is shared but the store) each send T
messages to the same thread at once; every turn is a graph run (input ->
think -> a tool -> reply). Whatever ``multitask_strategy`` they use, the
stored log must be paired, hold every message id once, and never interleave
two turns; each strategy then has its own promise about which turns land.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey, ToolCallBlock, is_paired
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.errors import ThreadBusyError
from tenxgraph.runs import _leases as thread_lease
from tenxgraph.storage.checkpointer import (
    Checkpointer,
    SqliteCheckpointer,
    ThreadStamp,
    ThreadWrite,
)
from tests.storage import _run_workers
from tests.storage.conftest import process_spec

TURNS = 5
LEASE_SECONDS = 0.3
"""Short, so a holder sees a stop request (at its heartbeat, every third of it) mid-turn."""
WHOLE = ("user", "call", "result", "reply")
EXPIRED = "expired and another run took the thread"
"""What a run displaced when its lease expired is told (``ThreadBusyError``)."""
spawn = multiprocessing.get_context("spawn")

Outcomes = dict[str, tuple[str, str]]
"""Turn text -> (``acked`` | ``busy`` | ``error``, status or message)."""


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param(
            "postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
        ),
    ]
)
async def spec(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[dict[str, Any]]:
    async with process_spec(request.param, tmp_path, pg_schema, redis_prefix) as spec:
        yield spec


def run_writers(spec: dict[str, Any], processes: int, strategy: str) -> Outcomes:
    """Start ``processes`` writers together; collect every turn's outcome."""
    barrier = spawn.Barrier(processes)
    results = spawn.Queue()
    writers = [
        spawn.Process(
            target=_run_workers.append_turns,
            args=(spec, f"p{n}", TURNS, strategy, LEASE_SECONDS, barrier, results),
        )
        for n in range(processes)
    ]
    for writer in writers:
        writer.start()
    outcomes: Outcomes = {}
    deadline = time.monotonic() + 300
    try:
        while len(outcomes) < processes * TURNS and time.monotonic() < deadline:
            try:
                text, outcome, detail = results.get(timeout=1)
            except queue.Empty:
                if not any(writer.is_alive() for writer in writers) and results.empty():
                    break
                continue
            outcomes[text] = (outcome, detail)
        for writer in writers:
            writer.join(30)
        assert [w.exitcode for w in writers] == [0] * processes
        assert len(outcomes) == processes * TURNS
    finally:
        for writer in writers:
            if writer.is_alive():
                writer.kill()
    return outcomes


@dataclass
class Turn:
    """One turn's run of messages in the log: its text and the kinds of its messages."""

    text: str
    kinds: list[str] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        return tuple(self.kinds) == WHOLE


def tag(message: Message) -> tuple[str, str]:
    """Which turn a stored message belongs to, and what it is in that turn."""
    if message.role == "user":
        return message.text(), "user"
    if message.role == "tool":
        block = message.content[0]
        assert isinstance(block, ToolResultBlock)
        return block.call_id.removeprefix("call-"), "failed" if block.is_error else "result"
    calls = message.tool_calls()
    if calls:
        return calls[0].id.removeprefix("call-"), "call"
    return message.text().removeprefix("reply to "), "reply"


def turns_of(log: list[Message]) -> list[Turn]:
    """The log cut into runs of messages of one turn each, in order."""
    turns: list[Turn] = []
    for message in log:
        text, kind = tag(message)
        if not turns or turns[-1].text != text:
            turns.append(Turn(text))
        turns[-1].kinds.append(kind)
    return turns


def check_log(log: list[Message], outcomes: Outcomes) -> dict[str, Turn]:
    """What holds for every strategy; returns the turns by text."""
    assert is_paired(log)
    ids = Counter(message.message_id for message in log)
    assert [i for i, n in ids.items() if n > 1] == []
    turns = turns_of(log)
    texts = [turn.text for turn in turns]
    assert [t for t, n in Counter(texts).items() if n > 1] == [], "turns interleaved"
    assert [t.text for t in turns if t.kinds[0] != "user" or t.kinds.count("user") != 1] == []
    assert set(texts) <= set(outcomes)
    for writer in {text.split("-")[0] for text in texts}:  # each writer's turns in its order
        mine = [int(text.split("-")[1]) for text in texts if text.startswith(f"{writer}-")]
        assert mine == sorted(mine)
    assert [(t, o) for t, o in outcomes.items() if o[0] == "error"] == []
    return {turn.text: turn for turn in turns}


def with_outcome(outcomes: Outcomes, outcome: str, detail: str | None = None) -> set[str]:
    return {t for t, (o, d) in outcomes.items() if o == outcome and d == (detail or d)}


CUT_SHORT = {("user",), ("user", "call", "failed"), ("user", "call", "result")}
"""The shapes a turn stopped early leaves: its unfinished call answered ``failed``."""


def displaced_by_expiry(outcomes: Outcomes) -> set[str]:
    """Turns whose holder a loaded machine stalled past its 0.3 s lease, displaced and told so.

    Whatever such a turn saved before stays, as a stopped turn's does.
    """
    return {t for t in with_outcome(outcomes, "busy") if EXPIRED in outcomes[t][1]}


def check_reject(turns: dict[str, Turn], outcomes: Outcomes) -> None:
    acked = with_outcome(outcomes, "acked", "completed")
    displaced = displaced_by_expiry(outcomes)
    rejected = with_outcome(outcomes, "busy") - displaced
    assert acked | rejected | displaced == set(outcomes)
    assert all("multitask_strategy 'enqueue'" in outcomes[t][1] for t in rejected)
    assert set(turns) - displaced == acked  # every acknowledged turn, no rejected one
    assert [t for t in acked if not turns[t].whole] == []
    assert [t for t in displaced & set(turns) if tuple(turns[t].kinds) not in CUT_SHORT] == []


def check_enqueue(turns: dict[str, Turn], outcomes: Outcomes) -> None:
    completed = with_outcome(outcomes, "acked", "completed")
    displaced = displaced_by_expiry(outcomes)
    assert {t: outcomes[t] for t in set(outcomes) - completed - displaced} == {}
    assert completed <= set(turns)  # every acknowledged input (once: check_log)
    assert [t for t in completed if not turns[t].whole] == []
    assert [t for t in displaced & set(turns) if tuple(turns[t].kinds) not in CUT_SHORT] == []


def check_interrupt(turns: dict[str, Turn], outcomes: Outcomes) -> None:
    completed = with_outcome(outcomes, "acked", "completed")
    stopped = with_outcome(outcomes, "acked", "stopped")
    displaced = displaced_by_expiry(outcomes)
    assert {t: outcomes[t] for t in set(outcomes) - completed - stopped - displaced} == {}
    assert completed | stopped <= set(turns)  # every acknowledged input (once: check_log)
    assert [t for t in completed if not turns[t].whole] == []
    ended_early = stopped | (displaced & set(turns))
    assert [t for t in ended_early if tuple(turns[t].kinds) not in CUT_SHORT] == []


def check_rollback(turns: dict[str, Turn], outcomes: Outcomes) -> None:
    completed = with_outcome(outcomes, "acked", "completed")
    rolled_back = with_outcome(outcomes, "busy")
    assert completed | rolled_back == set(outcomes)
    # stopped by a newer run, or (a loaded machine stalling a holder past its 0.3 s lease)
    # displaced when its lease expired: the newer run discards that unfinished turn too
    reasons = ("'rollback' stopped this run", EXPIRED)
    assert [t for t in rolled_back if not any(r in outcomes[t][1] for r in reasons)] == []
    assert set(turns) == completed  # no message of a rolled-back turn
    assert [t for t in turns.values() if not t.whole] == []


CHECKS = {
    "reject": check_reject,
    "enqueue": check_enqueue,
    "interrupt": check_interrupt,
    "rollback": check_rollback,
}
STRATEGIES = ["reject", "enqueue", "interrupt", "rollback"]


@pytest.mark.parametrize("processes", [2, 4, pytest.param(8, marks=pytest.mark.slow)])
@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_writers_on_one_thread_keep_turns_whole(
    spec: dict[str, Any], processes: int, strategy: str
) -> None:
    started = time.monotonic()
    outcomes = await asyncio.to_thread(run_writers, spec, processes, strategy)
    checkpointer = _run_workers.open_checkpointer(spec)
    try:
        key = ThreadKey(_run_workers.BUSY_THREAD)
        log = [stored.message for stored in await checkpointer.alist_messages(key)]
    finally:
        await checkpointer.aclose()
    turns = check_log(log, outcomes)
    CHECKS[strategy](turns, outcomes)
    counts = Counter(o if o == "busy" else d for o, d in outcomes.values())
    print(
        f"\n{spec['kind']} {strategy} x{processes}: {dict(counts)}, {len(turns)} turns "
        f"in the log, {time.monotonic() - started:.1f} s"
    )


# --- the races the process runs found, pinned down in one process ----------------------------


@dataclass
class Hooks:
    """What the pinned graph's plan node does around its work (as a heartbeat would, mid-step)."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    returning: Callable[[], object] | None = None


def pinned_app(checkpointer: Checkpointer, hooks: Hooks, **options: Any) -> CompiledGraph[Any]:
    """user -> plan (a call ``c-<text>``; none for ``C``) -> tools; ``A`` plans for 5 s."""

    async def plan(state: AgentState) -> Message:
        text = state.context[-1].text()
        hooks.started.set()
        await asyncio.sleep(5.0 if text == "A" else 0.0)
        if hooks.returning is not None:
            hooks.returning()
        if text == "C":
            return Message.text_message("reply to C", role="assistant")
        return Message(role="assistant", content=[ToolCallBlock(id=f"c-{text}", name="work")])

    async def work() -> str:
        """Finish at once."""
        return "done"

    graph = StateGraph(AgentState)
    graph.add_node("plan", plan)
    graph.add_node("tools", ToolNode([work]))
    graph.set_entry_point("plan")
    graph.add_edge("plan", "tools")  # a plain edge: nothing awaited between a node and its save
    return graph.compile(checkpointer, **options)


def said(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


async def test_a_displaced_turn_is_discarded_whoever_takes_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holds; B ('rollback') displaces it; C finds the thread free before B polls again.

    Found by the rollback runs above, and fixed: the waiter used to
    discard the displaced turn, so C built on half of A's turn.
    """
    monkeypatch.setattr(thread_lease, "_FIRST_POLL", 1.0)  # B polls once a second
    monkeypatch.setattr(thread_lease, "_LAST_POLL", 1.0)
    stores = [SqliteCheckpointer(tmp_path / "t.db") for _ in range(3)]  # as three processes
    hooks = Hooks()
    a, b, c = (
        pinned_app(store, hooks, lease_seconds=0.3, multitask_strategy="rollback")
        for store in stores
    )
    config = {"thread_id": "t"}
    first = asyncio.create_task(a.ainvoke(said("A"), config))
    await hooks.started.wait()  # A's input is saved, its first node runs
    second = asyncio.create_task(b.ainvoke(said("B"), config))
    with pytest.raises(ThreadBusyError, match="discards its unfinished turn"):
        await first
    await c.ainvoke(said("C"), config)
    await second
    log = [m.message.text() for m in await stores[0].alist_messages(ThreadKey("t"))]
    for store in stores:
        await store.aclose()
    assert "A" not in log, log


class StopAfterCommit(SqliteCheckpointer):
    """Its ``stop_at``-th save commits, then the run is stopped before the save returns.

    As with a stop request that a heartbeat reads while a Postgres commit's
    answer is on its way: the write is durable, the run not yet told.
    """

    def __init__(self, path: Path, stop_at: int) -> None:
        super().__init__(path)
        self.stop_at, self.saves = stop_at, 0
        self.app: CompiledGraph[Any] | None = None

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        stamp = await super().asave(key, write)
        self.saves += 1
        if self.saves == self.stop_at and self.app is not None:
            self.app.stop({"thread_id": key.thread_id})  # a lease's on_stop is this stop
            await asyncio.sleep(0)  # the stop's cancel lands here
        return stamp


async def run_outcome(app: CompiledGraph[Any]) -> tuple[str, str]:
    """How a run of ``go`` ended (its status or exception name), and the stored status."""
    run = asyncio.create_task(app.ainvoke(said("go"), {"thread_id": "t"}))
    await asyncio.wait([run])
    if run.cancelled():
        outcome = "CancelledError"
    elif run.exception() is not None:
        outcome = type(run.exception()).__name__
    else:
        outcome = run.result()["state"].execution_meta.status
    stored = await app.aget_state({"thread_id": "t"})
    assert stored is not None
    return outcome, stored.execution_meta.status


@pytest.mark.parametrize("stop_at", [3, 4])  # the tool node's saves: its start, its result
async def test_a_stop_while_a_save_commits_ends_the_run_stopped(
    tmp_path: Path, stop_at: int
) -> None:
    store = StopAfterCommit(tmp_path / "t.db", stop_at)
    app = store.app = pinned_app(store, Hooks())
    outcome = await run_outcome(app)
    await store.aclose()
    assert outcome == ("stopped", "stopped")


async def test_a_stop_as_a_node_returns_ends_the_run_stopped(tmp_path: Path) -> None:
    store = SqliteCheckpointer(tmp_path / "t.db")
    hooks = Hooks()
    app = pinned_app(store, hooks)
    hooks.returning = lambda: app.stop({"thread_id": "t"})  # its cancel lands in the next save
    outcome = await run_outcome(app)
    await store.aclose()
    assert outcome == ("stopped", "stopped")
