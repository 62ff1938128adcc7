"""A run's ``values`` and ``checkpoints`` come from the run's own saves, equal to the history.

The run stream does not read the thread back after each step: the runtime
hands it each save (``RunControl.on_save``). What it sends must still be
exactly what the thread's history holds: after reducers, for a parallel
step's merge, at a pause, and for a resumed run that saved nothing before
its first event (which reads the stored state once).
"""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any

from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.server import _shapes as shapes
from tenxgraph.server._event_log import EventLog
from tenxgraph.server._run_stream import RunStreamWriter, StreamEncoder
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import START

SNAPSHOTS = ("values", "checkpoints", "debug", "updates")


class Notes(AgentState):
    notes: Annotated[list[str], operator.add] = []


class CountingCheckpointer(InMemoryCheckpointer):
    """Counts the thread reads a run stream could make (loads and history)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def aload(self, key: ThreadKey) -> Any:
        self.reads += 1
        return await super().aload(key)

    async def alist_checkpoints(self, key: ThreadKey, limit: int | None = None) -> Any:
        self.reads += 1
        return await super().alist_checkpoints(key, limit=limit)


def _note(text: str) -> Any:
    async def node(state: Notes) -> dict[str, Any]:
        said = Message.text_message(f"{text} saw {len(state.notes)}", role="assistant")
        return {"notes": [text], "context": [said]}

    return node


async def _announced(state: Notes, writer: Any) -> dict[str, Any]:
    """Node d: it writes custom data first, so its run's first event comes before its save."""
    writer({"d": "starts"})
    return await _note("d")(state)


def fan_graph(checkpointer: InMemoryCheckpointer) -> CompiledGraph[Notes]:
    """a -> (b, c) in one parallel step -> d, paused before d."""
    graph = StateGraph(Notes)
    for name in "abc":
        graph.add_node(name, _note(name))
    graph.add_node("d", _announced)
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("a", "c")
    graph.add_edge(["b", "c"], "d")
    return graph.compile(checkpointer, interrupt_before=["d"])


async def _stream(
    graph: CompiledGraph[Any], input: Any, modes: tuple[str, ...], thread: str, **config: Any
) -> list[tuple[str, Any]]:
    log = EventLog()
    writer = RunStreamWriter(log, StreamEncoder(), modes, f"run-{thread}")
    await writer.run(graph, input, {"thread_id": thread, "user_id": "u", **config})
    writer.end()
    return [(e.event, json.loads(e.data)) async for batch in log.follow(0) for e in batch]


def _of(events: list[tuple[str, Any]], name: str) -> list[Any]:
    return [data for event, data in events if event == name]


def test_values_and_checkpoints_are_the_histories_of_a_parallel_step_a_pause_and_a_resume() -> None:
    async def main() -> None:
        graph = fan_graph(InMemoryCheckpointer())
        config = {"thread_id": "t", "user_id": "u"}
        first = await _stream(graph, {"messages": [("user", "go")]}, SNAPSHOTS, "t")
        after_first = await graph.aget_state_history(config)
        second = await _stream(graph, {"resume": True}, SNAPSHOTS, "t")
        history = list(reversed(await graph.aget_state_history(config)))
        by_version = {snapshot.version: snapshot for snapshot in history}

        for events, newest in ((first, after_first[0].version), (second, history[-1].version)):
            sent = _of(events, "checkpoints")
            ids = [int(c["config"]["configurable"]["checkpoint_id"]) for c in sent]
            assert ids and ids[-1] == newest
            assert ids == list(range(ids[0], newest + 1))  # each once, in order
            for version, data in zip(ids, sent, strict=True):
                state = shapes.state_json("t", by_version[version])
                assert data["values"] == state["values"]
                assert (data["metadata"], data["next"]) == (state["metadata"], state["next"])
                parent = state["parent_checkpoint"]
                assert data["parent_config"] == (parent and {"configurable": parent})
            assert [d["payload"] for d in _of(events, "debug") if d["type"] == "checkpoint"] == sent
            values = [dict(v) for v in _of(events, "values")]
            values[-1].pop("__interrupt__", None)
            saved = [shapes.state_values(s.state) for s in history]
            assert all(v in saved for v in values)
            positions = [saved.index(v) for v in values]
            assert positions == sorted(positions)  # never an older state after a newer one

        assert _of(first, "values")[-1]["notes"] == ["a", "b", "c"]  # the merge, reducer applied
        assert _of(first, "values")[-1]["__interrupt__"]
        assert _of(second, "values")[0]["notes"] == ["a", "b", "c"]  # as stored, before d
        assert _of(second, "values")[-1]["notes"] == ["a", "b", "c", "d"]

    asyncio.run(main())


def test_a_values_stream_reads_the_thread_no_more_than_an_updates_stream() -> None:
    async def main() -> None:
        checkpointer = CountingCheckpointer()
        graph = fan_graph(checkpointer)
        await _stream(graph, {"messages": [("user", "go")]}, ("updates",), "plain")
        plain, checkpointer.reads = checkpointer.reads, 0
        events = await _stream(graph, {"messages": [("user", "go")]}, SNAPSHOTS, "full")
        assert len(_of(events, "values")) >= 3 and _of(events, "checkpoints")
        assert checkpointer.reads == plain

    asyncio.run(main())


def test_a_run_from_an_older_checkpoint_sends_its_own_steps_values() -> None:
    """Not the checkpoint it started from again: the run's config names that one."""

    async def main() -> None:
        graph = fan_graph(InMemoryCheckpointer())
        await _stream(graph, {"messages": [("user", "go")]}, ("values",), "t")
        history = await graph.aget_state_history({"thread_id": "t", "user_id": "u"})
        after_a = next(s for s in history if s.state.notes == ["a"])
        events = await _stream(graph, None, ("values",), "t", checkpoint_id=str(after_a.version))
        assert [v["notes"] for v in _of(events, "values")] == [["a", "b", "c"]] * 2

    asyncio.run(main())
