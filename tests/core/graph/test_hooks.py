"""Run hooks see every run, node and save in order; a broken hook never breaks a run."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tenxgraph.core.graph import RunControl, RunHooks, StateGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.errors import NodeError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, ThreadStamp


class Recorder(RunHooks):
    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.controls: list[RunControl] = []

    async def on_run_start(self, run: RunControl) -> None:
        self.controls.append(run)
        self.seen.append(("run start", run.thread))

    async def on_node_start(self, run: RunControl, node: str, step: int) -> None:
        self.seen.append(("node start", node, step))

    async def on_node_end(
        self, run: RunControl, node: str, step: int, error: BaseException | None
    ) -> None:
        self.seen.append(("node end", node, step, type(error).__name__ if error else None))

    async def on_save(self, run: RunControl, node: str, stamp: ThreadStamp) -> None:
        self.seen.append(("save", node, stamp.version))

    async def on_run_end(self, run: RunControl, status: str, error: BaseException | None) -> None:
        self.seen.append(("run end", status, type(error).__name__ if error else None))


def two_nodes(fail: bool = False) -> StateGraph[AgentState]:
    def first(state: AgentState) -> Message:
        return Message.text_message("one", role="assistant")

    def second(state: AgentState) -> Message:
        if fail:
            raise RuntimeError("broken")
        return Message.text_message("two", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("first", first)
    graph.add_node("second", second)
    graph.set_entry_point("first")
    graph.add_edge("first", "second")
    return graph


def test_hooks_see_runs_nodes_and_saves_in_order() -> None:
    recorder = Recorder()
    app = two_nodes().compile(InMemoryCheckpointer(), hooks=[recorder])
    result = app.invoke({"messages": [("user", "hi")]}, {"thread_id": "t", "run_id": "r1"})
    assert recorder.seen == [
        ("run start", ThreadKey("t")),
        ("save", "__start__", 1),  # the input, before any node
        ("node start", "first", 1),
        ("node end", "first", 1, None),
        ("save", "first", 2),
        ("node start", "second", 2),
        ("node end", "second", 2, None),
        ("save", "second", 3),  # the last step and the run's end: one save
        ("run end", "completed", None),
    ]
    assert recorder.controls[0].run_id == "r1"
    assert [m.text() for m in result["messages"]] == ["one", "two"]


def test_a_stream_sees_the_last_step_saved_before_its_events() -> None:
    recorder = Recorder()
    app = two_nodes().compile(InMemoryCheckpointer(), hooks=[recorder])
    config = {"thread_id": "t"}
    saves_before_events = []
    for event in app.stream({"messages": [("user", "hi")]}, config):
        if getattr(event, "node", None) == "second":
            saves_before_events.append([s for s in recorder.seen if s[0] == "save"][-1])
    assert saves_before_events[0] == ("save", "second", 3)
    assert [s for s in recorder.seen if s[0] == "save"][-1] == ("save", "second", 4)


def test_hooks_see_a_failing_node_and_the_failed_run() -> None:
    recorder = Recorder()
    app = two_nodes(fail=True).compile(hooks=[recorder])
    with pytest.raises(NodeError, match=r"^node 'second': raised RuntimeError: broken$"):
        app.invoke({"messages": [("user", "hi")]})
    assert ("node end", "second", 2, "RuntimeError") in recorder.seen
    assert recorder.seen[-1] == ("run end", "error", "NodeError")


def test_a_hook_that_raises_is_logged_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(RunHooks):
        async def on_node_start(self, run: RunControl, node: str, step: int) -> None:
            raise ValueError("exporter down")

    recorder = Recorder()
    app = two_nodes().compile(hooks=[Broken(), recorder])
    with caplog.at_level(logging.ERROR, logger="tenxgraph.hooks"):
        result = app.invoke({"messages": [("user", "hi")]})
    assert [m.text() for m in result["messages"]] == ["one", "two"]
    assert "Broken.on_node_start raised" in caplog.text
    assert ("node start", "second", 2) in recorder.seen  # later hooks still called


async def test_stop_run_stops_the_run_with_that_id() -> None:
    started = asyncio.Event()

    async def slow(state: AgentState) -> Message:
        started.set()
        await asyncio.sleep(30)
        return Message.text_message("late", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("slow", slow)
    graph.set_entry_point("slow")
    app = graph.compile(InMemoryCheckpointer())
    run = asyncio.create_task(app.ainvoke({}, {"thread_id": "t", "run_id": "run-7"}))
    await started.wait()
    assert not app.stop_run("another")
    assert app.stop_run("run-7")
    result = await asyncio.wait_for(run, 5)
    assert result["state"].execution_meta.status == "stopped"
    assert not app.stop_run("run-7")  # it has ended


def test_a_stop_during_on_node_start_keeps_a_sync_node_from_running() -> None:
    """``invoke`` runs sync nodes inline (nothing to cancel): the stop is checked before."""
    ran: list[str] = []

    class StopsAtSecond(RunHooks):
        async def on_node_start(self, run: RunControl, node: str, step: int) -> None:
            if node == "second":
                run.stop()

    graph = StateGraph(AgentState)
    for name in ("first", "second"):
        graph.add_node(name, lambda state, name=name: ran.append(name))
    graph.set_entry_point("first")
    graph.add_edge("first", "second")
    result = graph.compile(hooks=[StopsAtSecond()]).invoke({})
    assert ran == ["first"]
    assert result["state"].execution_meta.status == "stopped"
