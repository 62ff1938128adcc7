"""The run manager without HTTP: what it keeps of finished runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.errors import EventsLostError
from tenxgraph.runs import RunSpec
from tenxgraph.server._run_parts import new_registry
from tenxgraph.server._run_stream import StreamEncoder
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tests.server.test_runs import slow_graph


def test_finished_runs_keep_their_records_longer_than_their_events(tmp_path: Path) -> None:
    async def main() -> None:
        graph = slow_graph(0.0, 1)(SqliteCheckpointer(str(tmp_path / "m.sqlite")))
        manager = new_registry(keep_finished=3, keep_logs=2)
        runs = []
        for index in range(4):
            config = {"thread_id": f"t{index}", "user_id": "u"}
            spec = RunSpec(
                graph, {"messages": [("user", "hi")]}, config, ("updates",), StreamEncoder()
            )
            record = manager.start(spec, assistant_id="agent")
            await manager.join(record)
            runs.append(record)
        assert manager.get("u", runs[0].run_id) is None  # past keep_finished
        assert manager.get("u", runs[1].run_id) is runs[1]
        with pytest.raises(EventsLostError, match="keeps events from"):
            async for _ in runs[1].log.follow(0):
                raise AssertionError("a discarded log replayed events")
        kept = [event.event async for batch in runs[3].log.follow(0) for event in batch]
        assert kept == ["metadata", "updates", "end"]
        await manager.aclose()
        assert graph.checkpointer is not None
        await graph.checkpointer.aclose()

    asyncio.run(main())


def _spec(graph: Any, text: str, strategy: str, thread: str = "t") -> RunSpec:
    config = {"thread_id": thread, "user_id": "u", "multitask_strategy": strategy}
    return RunSpec(graph, {"messages": [("user", text)]}, config, ("values",), StreamEncoder())


def test_a_run_displaced_before_its_task_began_ends_and_its_waiters_are_answered(
    tmp_path: Path,
) -> None:
    """``enqueue`` then ``interrupt`` in one turn of the loop: the queued run never ran a line."""

    async def main() -> None:
        graph = slow_graph(0.05, 2)(SqliteCheckpointer(str(tmp_path / "d.sqlite")))
        manager = new_registry()
        first = manager.start(_spec(graph, "a", "enqueue"), assistant_id="agent")
        await asyncio.sleep(0.02)
        queued = manager.start(_spec(graph, "b", "enqueue"), assistant_id="agent")
        last = manager.start(_spec(graph, "c", "interrupt"), assistant_id="agent")
        for record in (first, queued, last):
            await asyncio.wait_for(manager.join(record), 10)
        assert (first.status, queued.status, last.status) == (
            "interrupted",
            "interrupted",
            "success",
        )
        events = [e.event async for batch in queued.log.follow(0) for e in batch]
        assert events == ["metadata", "end"]
        assert not manager.busy("u", "t")
        await manager.aclose()
        assert graph.checkpointer is not None
        await graph.checkpointer.aclose()

    asyncio.run(main())


def test_a_run_stopped_while_it_waits_for_its_thread_reads_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """Stopped through its handle while the graph waits for the lease another caller holds."""

    async def main() -> None:
        graph = slow_graph(0.3, 1)(SqliteCheckpointer(str(tmp_path / "w.sqlite")))
        outside = asyncio.ensure_future(
            graph.ainvoke({"messages": [("user", "outside")]}, {"thread_id": "t", "user_id": "u"})
        )
        await asyncio.sleep(0.1)  # the outside run holds the thread's lease
        manager = new_registry()
        record = manager.start(_spec(graph, "b", "enqueue"), assistant_id="agent")
        await asyncio.sleep(0.05)  # it is in the graph, waiting for the lease
        assert record.started
        await manager.cancel(record)
        await asyncio.wait_for(manager.join(record), 10)
        assert record.status == "interrupted"
        await outside
        state = await graph.aget_state({"thread_id": "t", "user_id": "u"})
        assert state is not None
        assert [m.text() for m in state.context if m.role == "user"] == ["outside"]
        await manager.aclose()
        assert graph.checkpointer is not None
        await graph.checkpointer.aclose()

    asyncio.run(main())
