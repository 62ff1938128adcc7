"""The run manager without HTTP: what it keeps of finished runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tenxgraph.errors import EventsLostError
from tenxgraph.server._run_manager import RunManager, RunSpec
from tenxgraph.server._run_stream import StreamEncoder
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tests.server.test_runs import slow_graph


def test_finished_runs_keep_their_records_longer_than_their_events(tmp_path: Path) -> None:
    async def main() -> None:
        graph = slow_graph(0.0, 1)(SqliteCheckpointer(str(tmp_path / "m.sqlite")))
        manager = RunManager(keep_finished=3, keep_logs=2)
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
