"""Sync tools run on the graph's own threads, so tools that time out never block storage.

Regression: timed-out sync tools kept threads of the event loop's default
executor, which SQLite's I/O shares; after about six such calls every save
waited behind them. Here the stuck tools wait on an event that is only set
at the end of each test, so without the separation the saves would hang
(``asyncio.wait_for`` turns that hang into a failure instead of a stuck run).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, ToolNode, tool
from tenxgraph.core.graph._workers import WorkerPool
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.errors import GraphBuildError, WorkersExhaustedError
from tenxgraph.storage.checkpointer import SqliteCheckpointer

GUARD = 60.0
"""Seconds after which a hang counts as a failure (generous: this is not a speed test)."""


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let the stuck tool threads finish


def tool_graph(tools: list[Any], checkpointer: Any, tool_threads: int = 16) -> Any:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("tools", ToolNode(tools, timeout=0.1))
    graph.set_entry_point("tools")
    return graph.compile(checkpointer, tool_threads=tool_threads)


def call(name: str, call_id: str) -> dict[str, Any]:
    return {"messages": [Message(role="assistant", content=[ToolCallBlock(id=call_id, name=name)])]}


def results(state: AgentState) -> list[str]:
    return [str(getattr(m.content[0], "output", "")) for m in state.context if m.role == "tool"]


def test_timed_out_tools_do_not_hold_up_saves(tmp_path: Path, release: threading.Event) -> None:
    def stuck() -> str:
        """Never returns while the test runs."""
        release.wait()
        return "late"

    app = tool_graph([stuck], SqliteCheckpointer(tmp_path / "t.sqlite"))

    async def turns() -> None:
        for turn in range(12):  # twice the default executor's size on this machine
            config = {"thread_id": f"t{turn}"}
            await asyncio.wait_for(app.ainvoke(call("stuck", f"c{turn}"), config), GUARD)
            state = await app.aget_state(config)
            assert results(state) == ["tool 'stuck' timed out after 0.1 seconds"]

    asyncio.run(turns())
    assert app.workers.stuck == 12


def test_a_timeout_counts_from_the_start_of_the_call_not_from_its_wait_for_a_thread(
    tmp_path: Path,
) -> None:
    @tool(timeout=5.0)
    def slow() -> str:
        """Holds the only thread for a while, well within its own timeout."""
        time.sleep(0.5)
        return "slow done"

    def quick() -> str:
        """Returns at once once a thread takes it (the node's timeout: 0.1 s)."""
        return "quick done"

    app = tool_graph([slow, quick], SqliteCheckpointer(tmp_path / "t.sqlite"), tool_threads=1)
    both = Message(
        role="assistant",
        content=[ToolCallBlock(id="s", name="slow"), ToolCallBlock(id="q", name="quick")],
    )
    state = app.invoke({"messages": [both]}, {"thread_id": "t"})["state"]
    # quick waited ~0.5 s for the thread, then ran: not "timed out" without having run.
    assert results(state) == ["slow done", "quick done"]
    assert app.workers.stuck == 0


async def test_calls_queued_when_the_last_thread_gets_stuck_fail_instead_of_waiting(
    release: threading.Event,
) -> None:
    pool = WorkerPool(max_threads=1)
    stuck = asyncio.ensure_future(pool.run(release.wait, run_limit=0.1))
    await asyncio.sleep(0)  # queued first
    queued = asyncio.ensure_future(pool.run(lambda: "never ran"))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(stuck, GUARD)
    with pytest.raises(WorkersExhaustedError, match="became held by calls that timed out"):
        await asyncio.wait_for(queued, GUARD)
    assert pool.stuck == 1


def test_all_threads_stuck_is_reported_without_waiting(
    tmp_path: Path, release: threading.Event
) -> None:
    ran: list[str] = []

    def stuck() -> str:
        """Blocks until released."""
        release.wait()
        return "late"

    def quick() -> str:
        """Returns at once, on a tenxgraph worker thread."""
        ran.append(threading.current_thread().name)
        return "quick"

    app = tool_graph([stuck, quick], SqliteCheckpointer(tmp_path / "t.sqlite"), tool_threads=2)
    app.invoke(call("quick", "q0"), {"thread_id": "a"})
    assert ran and ran[0].startswith("tenxgraph-worker")
    for turn in range(2):
        app.invoke(call("stuck", f"s{turn}"), {"thread_id": f"s{turn}"})
    assert app.workers.stuck == 2
    app.invoke(call("quick", "q1"), {"thread_id": "b"})
    [message] = results(app.get_state({"thread_id": "b"}))
    assert "all 2 worker threads are held by calls that timed out" in message
    assert len(ran) == 1  # the quick tool did not run, and nothing waited for a thread

    release.set()
    for _ in range(200):
        if app.workers.stuck == 0:
            break
        threading.Event().wait(0.05)
    assert app.workers.stuck == 0
    app.invoke(call("quick", "q2"), {"thread_id": "c"})
    assert results(app.get_state({"thread_id": "c"})) == ["quick"]


def test_tool_threads_must_be_positive() -> None:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("tools", ToolNode([]))
    graph.set_entry_point("tools")
    with pytest.raises(GraphBuildError, match="tool_threads"):
        graph.compile(tool_threads=0)
