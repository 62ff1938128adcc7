"""One run per thread on every backend: the strategies, lost leases, whole turns, repair.

Runs here are asyncio tasks of one process; ``tests/storage/test_busy_processes.py``
runs the same strategies across processes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.graph._tool_node import INTERRUPTED_CALL_TEXT
from tenxgraph.core.state import AgentState, Message, ThreadKey, ToolCallBlock
from tenxgraph.core.state.pairing import is_paired
from tenxgraph.errors import ConfigError, GraphBuildError, NodeError, StateError, ThreadBusyError
from tenxgraph.runs import LeasePolicy, ThreadLease
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer
from tests.storage.conftest import MakeCheckpointer

CONFIG = {"thread_id": "busy"}
KEY = ThreadKey("busy")


class Gated:
    """A reply node that waits for its gate, so a test controls when a run is mid-turn."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()

    async def __call__(self, state: AgentState) -> Message:
        self.started.set()
        await self.gate.wait()
        return Message.text_message(f"reply to {state.context[-1].text()}", role="assistant")


def gated_app(checkpointer: Checkpointer, **options: Any) -> tuple[CompiledGraph[Any], Gated]:
    node = Gated()
    graph = StateGraph(AgentState)
    graph.add_node("reply", node)
    graph.set_entry_point("reply")
    return graph.compile(checkpointer, **options), node


def said(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


async def log(checkpointer: Checkpointer) -> list[str]:
    return [stored.message.text() for stored in await checkpointer.alist_messages(KEY)]


async def test_a_second_run_is_rejected_before_it_writes(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer)
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    with pytest.raises(ThreadBusyError, match="multitask_strategy 'enqueue'"):
        await app.ainvoke(said("B"), CONFIG)
    node.gate.set()
    await first
    assert await log(checkpointer) == ["A", "reply to A"]


async def test_enqueue_waits_and_both_turns_land_whole(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer, multitask_strategy="enqueue")
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    second = asyncio.create_task(app.ainvoke(said("B"), CONFIG))
    await asyncio.sleep(0.1)
    assert not second.done()
    node.gate.set()
    await asyncio.gather(first, second)
    assert await log(checkpointer) == ["A", "reply to A", "B", "reply to B"]


async def test_enqueue_gives_up_after_busy_timeout(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer)
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    waiting = {**CONFIG, "multitask_strategy": "enqueue", "busy_timeout": 0.2}
    with pytest.raises(ThreadBusyError, match="busy_timeout"):
        await app.ainvoke(said("B"), waiting)
    node.gate.set()
    await first
    assert await log(checkpointer) == ["A", "reply to A"]


async def test_interrupt_stops_the_holder_and_keeps_its_turn(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer, lease_seconds=0.3)
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    node.started.clear()
    second = asyncio.create_task(
        app.ainvoke(said("B"), {**CONFIG, "multitask_strategy": "interrupt"})
    )
    result = await asyncio.wait_for(first, 5)
    assert result["state"].execution_meta.status == "stopped"
    await node.started.wait()
    node.gate.set()
    await second
    assert await log(checkpointer) == ["A", "B", "reply to B"]


async def test_rollback_discards_the_holders_unfinished_turn(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer, lease_seconds=0.3)
    node.gate.set()
    await app.ainvoke(said("seed"), CONFIG)
    node.gate.clear()
    node.started.clear()
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    node.started.clear()
    second = asyncio.create_task(
        app.ainvoke(said("B"), {**CONFIG, "multitask_strategy": "rollback"})
    )
    with pytest.raises(ThreadBusyError, match="rollback"):
        await asyncio.wait_for(first, 5)
    await node.started.wait()
    node.gate.set()
    await second
    assert await log(checkpointer) == ["seed", "reply to seed", "B", "reply to B"]


async def test_a_run_that_lost_its_lease_writes_nothing_more(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer, lease_seconds=0.3)
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    stored_before = await checkpointer.aload(KEY)
    # what a stall past the expiry amounts to: the lease is gone and another run took it
    holder = await checkpointer.atake_lease(KEY, "someone", 60)
    assert holder is not None
    await checkpointer.arelease_lease(KEY, holder)
    assert await checkpointer.atake_lease(KEY, "someone", 60) is None
    node.gate.set()
    with pytest.raises(ThreadBusyError):
        await asyncio.wait_for(first, 5)
    stored = await checkpointer.aload(KEY)
    assert stored is not None and stored_before is not None
    assert stored.stamp == stored_before.stamp
    assert await log(checkpointer) == ["A"]


async def test_the_input_is_stored_before_the_first_node_runs(checkpointer: Checkpointer) -> None:
    app, node = gated_app(checkpointer)
    run = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    assert await log(checkpointer) == ["A"]
    node.gate.set()
    await run


async def test_deleting_a_thread_a_run_holds_is_refused_and_the_run_saves(
    checkpointer: Checkpointer,
) -> None:
    """The graph's strategy (enqueue here) is not a delete's: it rejects unless asked to wait."""
    app, node = gated_app(checkpointer, multitask_strategy="enqueue")
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    with pytest.raises(ThreadBusyError, match="thread 'busy' is busy") as raised:
        await app.adelete_thread(CONFIG)
    assert raised.value.thread_id == "busy"
    node.gate.set()
    result = await first
    assert result["state"].execution_meta.status == "completed"
    assert await log(checkpointer) == ["A", "reply to A"]
    assert await app.adelete_thread(CONFIG) is True  # free now: deleted
    assert await checkpointer.aload(KEY) is None
    assert await app.adelete_thread(CONFIG) is False


async def test_a_delete_asked_to_wait_deletes_once_the_run_has_saved(
    checkpointer: Checkpointer,
) -> None:
    app, node = gated_app(checkpointer)
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    delete = asyncio.create_task(app.adelete_thread({**CONFIG, "multitask_strategy": "enqueue"}))
    await asyncio.sleep(0.1)
    assert not delete.done()
    node.gate.set()
    assert (await first)["state"].execution_meta.status == "completed"
    assert await delete is True
    assert await checkpointer.aload(KEY) is None


def failing_app(checkpointer: Checkpointer, failures: list[str]) -> CompiledGraph[Any]:
    def reply(state: AgentState) -> Message:
        if failures:
            raise RuntimeError(failures.pop())
        return Message.text_message(f"reply to {state.context[-1].text()}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph.compile(checkpointer)


async def test_a_failed_turn_refuses_new_input_and_retries_without_duplicates(
    checkpointer: Checkpointer,
) -> None:
    app = failing_app(checkpointer, ["provider down"])
    with pytest.raises(NodeError, match="provider down"):
        await app.ainvoke(said("A"), CONFIG)
    with pytest.raises(StateError, match=r"failed at node 'reply'.*invoke\(None, config\)"):
        await app.ainvoke(said("A"), CONFIG)
    result = await app.ainvoke(None, CONFIG)
    assert result["state"].execution_meta.status == "completed"
    assert await log(checkpointer) == ["A", "reply to A"]


async def test_rollback_discards_a_failed_turn_whole(checkpointer: Checkpointer) -> None:
    failures: list[str] = []
    app = failing_app(checkpointer, failures)
    await app.ainvoke(said("seed"), CONFIG)
    before = await app.aget_state(CONFIG)
    failures.append("provider down")
    with pytest.raises(NodeError, match="provider down"):
        await app.ainvoke(said("A"), CONFIG)
    assert await app.arollback(CONFIG) is True
    assert await app.arollback(CONFIG) is False  # nothing unfinished is left
    after = await app.aget_state(CONFIG)
    assert before is not None and after is not None
    assert after.context == before.context
    assert after.execution_meta.status == "completed"
    assert await log(checkpointer) == ["seed", "reply to seed"]
    await app.ainvoke(said("A"), CONFIG)
    assert await log(checkpointer) == ["seed", "reply to seed", "A", "reply to A"]


async def test_rollback_of_a_new_threads_failed_turn_deletes_it(
    checkpointer: Checkpointer,
) -> None:
    app = failing_app(checkpointer, ["provider down"])
    with pytest.raises(NodeError, match="provider down"):
        await app.ainvoke(said("A"), CONFIG)
    assert await app.arollback(CONFIG) is True
    assert await checkpointer.aload(KEY) is None


async def test_a_stopped_tool_call_is_answered_when_the_thread_moves_on(
    checkpointer: Checkpointer,
) -> None:
    started = asyncio.Event()

    def plan(state: AgentState) -> Message:
        if state.context[-1].text() == "go":
            return Message(role="assistant", content=[ToolCallBlock(id="c1", name="slow")])
        return Message.text_message("fine", role="assistant")

    async def slow() -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    graph = StateGraph(AgentState)
    graph.add_node("plan", plan)
    graph.add_node("tools", ToolNode([slow]))
    graph.set_entry_point("plan")
    graph.add_conditional_edges(
        "plan", lambda s: "tools" if s.context[-1].tool_calls() else "__end__"
    )
    app = graph.compile(checkpointer)
    run = asyncio.create_task(app.ainvoke(said("go"), CONFIG))
    await started.wait()
    assert app.stop(CONFIG)
    assert (await run)["state"].execution_meta.status == "stopped"

    await app.ainvoke(said("next"), CONFIG)
    stored = [s.message for s in await checkpointer.alist_messages(KEY)]
    assert [m.role for m in stored] == ["user", "assistant", "tool", "user", "assistant"]
    result = stored[2].content[0]
    assert result.call_id == "c1" and result.is_error
    assert result.output == INTERRUPTED_CALL_TEXT
    assert is_paired(stored)


def test_compile_refuses_a_bad_lease_policy(make_checkpointer: MakeCheckpointer) -> None:
    graph = StateGraph(AgentState)
    graph.add_node("reply", Gated())
    graph.set_entry_point("reply")
    with pytest.raises(GraphBuildError, match="multitask_strategy"):
        graph.compile(make_checkpointer(), multitask_strategy="queue")  # type: ignore[arg-type]
    with pytest.raises(GraphBuildError, match="lease_seconds"):
        graph.compile(make_checkpointer(), lease_seconds=0)


async def test_a_run_gives_its_thread_up_with_its_last_save() -> None:
    class Counting(InMemoryCheckpointer):
        calls: list[str] = []

        async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
            self.calls.append("release")
            await super().arelease_lease(key, owner)

        async def aversion(self, key: ThreadKey) -> Any:
            self.calls.append("version")
            return await super().aversion(key)

    checkpointer = Counting()
    app, node = gated_app(checkpointer)
    node.gate.set()
    for text in ("one", "two"):  # the second turn reuses the warm thread
        await app.ainvoke(said(text), CONFIG)
    assert checkpointer.calls == []  # no separate release, no separate version check
    assert await checkpointer.atake_lease(KEY, "next", 30) is None  # the thread is free


class _RenewFailsOnce(InMemoryCheckpointer):
    """A third-party backend whose first renewal raises its own error, not a StorageError."""

    renewals = 0

    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        self.renewals += 1
        if self.renewals == 1:
            raise ConnectionResetError("one renewal failed")
        return await super().arenew_lease(key, owner, seconds)


async def test_a_renewal_failing_with_a_foreign_error_keeps_the_turn() -> None:
    async def slow_reply(state: AgentState) -> Message:
        await asyncio.sleep(0.3)  # long enough for a few beats of a 0.3 s lease
        return Message.text_message("hi", role="assistant")

    checkpointer = _RenewFailsOnce()
    graph = StateGraph(AgentState)
    graph.add_node("reply", slow_reply)
    graph.set_entry_point("reply")
    app = graph.compile(checkpointer, lease_seconds=0.3)
    await app.ainvoke({"messages": [Message.text_message("x")]}, {"thread_id": "t"})
    assert checkpointer.renewals >= 2  # it kept beating after the failure
    stored = await checkpointer.alist_messages(ThreadKey("t"))
    assert [m.message.text() for m in stored] == ["x", "hi"]
    holder, _ = await checkpointer.atake_thread(ThreadKey("t"), "next-run", 3)
    assert holder is None  # given up with the last save


async def test_cancelling_a_run_while_its_heartbeat_stops_cancels_it() -> None:
    """The beat's own cancel is waited for; a cancel of the run meanwhile is not swallowed."""

    class SlowRenewal(InMemoryCheckpointer):
        async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                await asyncio.sleep(0.05)  # a driver cleaning its connection up on cancel
                raise
            return None

    checkpointer, key = SlowRenewal(), ThreadKey("t")
    await checkpointer.atake_thread(key, "owner", 3)
    lease = ThreadLease(checkpointer, key, "owner", 0.03)
    lease.start_heartbeat()
    await asyncio.sleep(0.05)  # the beat is inside its renewal
    went_on: list[str] = []

    async def last_save() -> None:
        await lease.stop_heartbeat()
        went_on.append("saved")

    task = asyncio.create_task(last_save())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert went_on == []


async def _drain(app: CompiledGraph[Any], control: Any, text: str = "A") -> list[Any]:
    return [event async for event in app.astream(said(text), CONFIG, control=control)]


async def test_a_run_continues_a_lease_its_caller_took_and_leaves_it_held(
    checkpointer: Checkpointer,
) -> None:
    from tenxgraph.core.graph import RunControl

    app, node = gated_app(checkpointer)
    node.gate.set()
    assert await checkpointer.atake_lease(KEY, "r1/caller", 30) is None  # a run queue's claim
    control = RunControl("r1", None)
    control.lease_owner = "r1/caller"
    await _drain(app, control)
    assert await log(checkpointer) == ["A", "reply to A"]
    assert await checkpointer.atake_lease(KEY, "r2/other", 30) == "r1/caller"  # still held
    await checkpointer.arelease_lease(KEY, "r1/caller")  # the caller lets it go


async def test_a_run_starts_from_the_stamp_its_caller_read_with_the_lease_once(
    checkpointer: Checkpointer,
) -> None:
    """The stamp is trusted as read with the lease: a stale one is caught by the save's CAS."""
    from tenxgraph.core.graph import RunControl
    from tenxgraph.errors import ConflictError

    app, node = gated_app(checkpointer)
    other, other_node = gated_app(checkpointer)  # another process's graph: its own warm copy
    node.gate.set()
    other_node.gate.set()
    await _drain(app, RunControl("r0", None), "first")
    await app.aget_state(CONFIG)  # kept warm from this read (its first run created it)
    stale = await checkpointer.aversion(KEY)  # what app's warm copy holds
    await _drain(other, RunControl("r1", None), "elsewhere")
    assert await checkpointer.atake_lease(KEY, "r2/caller", 30) is None
    control = RunControl("r2", None)
    control.lease_owner, control.lease_stamp = "r2/caller", stale
    with pytest.raises(ConflictError):  # it started from the stamp given, not a read of its own
        await _drain(app, control, "A")
    assert control.lease_stamp is None  # used once: the run's next leg reads the stamp anew
    await _drain(app, control, "B")
    assert (await log(checkpointer))[-3:] == ["reply to elsewhere", "B", "reply to B"]
    await checkpointer.arelease_lease(KEY, "r2/caller")


async def test_a_stop_asked_before_the_run_took_its_callers_lease_is_not_lost(
    checkpointer: Checkpointer,
) -> None:
    from tenxgraph.core.graph import RunControl

    app, node = gated_app(checkpointer)
    node.gate.set()
    assert await checkpointer.atake_lease(KEY, "r1/caller", 30) is None
    assert await checkpointer.arequest_stop(KEY, "interrupt", owner_prefix="r1/") == "r1/caller"
    control = RunControl("r1", None)
    control.lease_owner = "r1/caller"
    await _drain(app, control)
    assert control.stop_requested and await log(checkpointer) == []  # it never began
    with pytest.raises(ThreadBusyError):  # a caller's lease that is gone is not taken anew
        control = RunControl("r1", None)
        control.lease_owner = "r1/gone"
        await _drain(app, control)


def test_a_runs_config_overrides_its_graphs_lease_policy() -> None:
    policy = LeasePolicy(20.0, "enqueue", 5.0)
    assert LeasePolicy() == LeasePolicy(30.0, "reject", 60.0)
    assert policy.for_run({}) is policy
    same = {"multitask_strategy": "enqueue", "busy_timeout": 5.0, "lease_seconds": 20.0}
    assert policy.for_run(same) is policy
    assert policy.for_run({"multitask_strategy": "rollback"}) == LeasePolicy(20.0, "rollback", 5.0)
    assert policy.for_run({"busy_timeout": 0}) == LeasePolicy(20.0, "enqueue", 0)
    assert policy.for_run({"lease_seconds": 3.0}) == LeasePolicy(3.0, "enqueue", 5.0)
    strategies = "['reject', 'enqueue', 'interrupt', 'rollback']"
    for config, why in [
        ({"multitask_strategy": "queue"}, f"must be one of {strategies}, got 'queue'"),
        ({"busy_timeout": -1}, "busy_timeout must be >= 0 seconds, got -1"),
        ({"busy_timeout": float("nan")}, "busy_timeout must be >= 0 seconds, got nan"),
        ({"lease_seconds": 0}, "lease_seconds must be > 0, got 0"),
        ({"lease_seconds": float("nan")}, "lease_seconds must be > 0, got nan"),
    ]:
        with pytest.raises(ConfigError) as raised:
            policy.for_run(config)
        assert str(raised.value).endswith(why)
        assert str(raised.value).startswith(next(iter(config)))
