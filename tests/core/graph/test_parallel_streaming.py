"""A stream consumer of a parallel step gets what its tasks stream while they run.

Deltas of an ``Agent``, custom data and subgraphs' events come as the tasks
produce them; the step's complete messages and updates follow its merge, in
merge order. A stop mid-step under ``astream`` keeps the finished tasks.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

import pytest

from tenxgraph.core.graph import (
    Agent,
    CustomEvent,
    MessageEvent,
    StateGraph,
    SubgraphEvent,
    UpdateEvent,
    get_stream_writer,
)
from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.core.state.pairing import pairing_violations
from tenxgraph.errors import NodeError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import START
from tests.core.graph.test_parallel import tools_beside_audit


class Hits(AgentState):
    hits: Annotated[list[str], operator.add] = []


def fan_out(slow: Any) -> StateGraph[Hits]:
    """START -> writer (an Agent) and slow, in one parallel step."""
    graph = StateGraph(Hits)
    graph.add_node("writer", Agent(model=ScriptedModel(["a long streamed answer"])))
    graph.add_node("slow", slow)
    graph.add_edge(START, "writer")
    graph.add_edge(START, "slow")
    return graph


async def test_an_agents_deltas_stream_while_the_other_task_still_runs() -> None:
    release = asyncio.Event()

    async def slow(state: Hits) -> dict[str, Any]:
        get_stream_writer()({"waiting": True})
        await release.wait()  # returns only once the consumer saw the writer's deltas
        return {"hits": ["slow"]}

    app = fan_out(slow).compile()
    events: list[Any] = []
    async with asyncio.timeout(60):  # a guard against a hang, not a timing assertion
        async for event in app.astream({"messages": [("user", "hi")]}):
            events.append(event)
            if isinstance(event, MessageEvent) and event.message.delta:
                release.set()
    deltas = [e for e in events if isinstance(e, MessageEvent) and e.message.delta]
    assert {e.node for e in deltas} == {"writer"}
    assert "".join(e.message.text() for e in deltas) == "a long streamed answer"
    assert [e.data for e in events if isinstance(e, CustomEvent)] == [{"waiting": True}]
    complete = [e for e in events if isinstance(e, MessageEvent) and not e.message.delta]
    assert [e.message.text() for e in complete] == ["a long streamed answer"]
    updates = [e for e in events if isinstance(e, UpdateEvent)]
    assert [e.node for e in updates] == ["slow", "writer"]  # merge order: by node name
    assert events.index(deltas[-1]) < events.index(updates[0])  # live, before the merge
    assert events.index(updates[0]) < events.index(complete[0]) < events.index(updates[1])
    final = events[-1].state
    assert final.hits == ["slow"] and [m.delta for m in final.context] == [False, False]


async def test_a_stop_mid_step_under_astream_keeps_the_finished_task() -> None:
    release = asyncio.Event()

    async def slow(state: Hits) -> dict[str, Any]:
        get_stream_writer()("started")
        await release.wait()
        return {"hits": ["slow"]}

    app = fan_out(slow).compile(InMemoryCheckpointer())
    config = {"thread_id": "stop"}
    events: list[Any] = []
    async with asyncio.timeout(60):  # a guard against a hang, not a timing assertion
        async for event in app.astream({"messages": [("user", "hi")]}, config):
            events.append(event)
            if isinstance(event, CustomEvent):  # the step runs on while this reader waits
                while True:  # until the writer's write is saved
                    saved = await app.aget_state(config)
                    if saved is not None and saved.execution_meta.task_writes:
                        break
                    await asyncio.sleep(0.01)
                assert app.stop(config)
    meta = events[-1].state.execution_meta
    assert (meta.status, meta.next_node, list(meta.task_writes)) == ("stopped", PARALLEL, ["1"])
    release.set()
    done = await app.ainvoke(None, config)
    assert done["state"].hits == ["slow"]
    assert [m.text() for m in done["state"].context] == ["hi", "a long streamed answer"]


def test_a_subgraph_task_streams_its_events_with_subgraphs_true() -> None:
    inner = StateGraph(Hits)
    inner.add_node("search", lambda s: {"hits": ["inner"]})
    inner.add_edge(START, "search")
    graph = StateGraph(Hits)
    graph.add_node("left", inner.compile())
    graph.add_node("right", lambda s: {"hits": ["right"]})
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    events = list(graph.compile().stream({"messages": [("user", "go")]}, subgraphs=True))
    nested = [e for e in events if isinstance(e, SubgraphEvent)]
    assert [(e.namespace, e.event.node) for e in nested] == [(("left:0",), "search")]
    assert nested[0].state is not None and nested[0].state.hits == ["inner"]
    assert [e.node for e in events if isinstance(e, UpdateEvent)] == ["left", "right"]
    assert events[-1].state.hits == ["inner", "right"]
    plain = list(graph.compile().stream({"messages": [("user", "go")]}))
    assert not any(isinstance(e, SubgraphEvent) for e in plain)


async def test_closing_the_stream_mid_step_ends_the_step_and_keeps_finished_tasks() -> None:
    async def slow(state: Hits) -> dict[str, Any]:
        get_stream_writer()("started")
        await asyncio.Event().wait()  # never returns: only the close ends it
        return {}

    app = fan_out(slow).compile(InMemoryCheckpointer())
    config = {"thread_id": "closed"}
    stream = app.astream({"messages": [("user", "hi")]}, config)
    async with asyncio.timeout(60):  # a guard against a hang, not a timing assertion
        async for event in stream:
            if isinstance(event, CustomEvent):
                while True:  # until the writer's write is saved
                    saved = await app.aget_state(config)
                    if saved is not None and saved.execution_meta.task_writes:
                        break
                    await asyncio.sleep(0.01)
                break
        await stream.aclose()
    saved = await app.aget_state(config)
    assert saved is not None
    meta = saved.execution_meta
    assert (meta.next_node, list(meta.task_writes)) == (PARALLEL, ["1"])


def test_a_streamed_tool_node_task_saves_its_ledger_and_is_not_run_again() -> None:
    searches: list[str] = []
    broken = [True]

    def search(q: str) -> str:
        """Search the web."""
        searches.append(q)
        return f"found {q}"

    def plan(state: Hits) -> Message:
        calls = [ToolCallBlock(id=f"c{n}", name="search", args={"q": f"q{n}"}) for n in (1, 2)]
        return Message(role="assistant", content=calls)

    async def audit(state: Hits) -> dict[str, Any]:
        if broken[0]:  # fail once the tools' write is saved (a failure cancels the others)
            while True:
                saved = await app.aget_state(config)
                if saved is not None and saved.execution_meta.task_writes:
                    break
                await asyncio.sleep(0.01)
            raise ValueError("audit log unavailable")
        return {"hits": ["audited"]}

    app = tools_beside_audit(plan, search, audit, Hits).compile(InMemoryCheckpointer())
    config = {"thread_id": "t"}
    with pytest.raises(NodeError, match="audit log unavailable"):
        list(app.stream({"messages": [("user", "look it up")]}, config))
    saved = app.get_state(config)
    assert saved is not None and list(saved.execution_meta.task_writes) == ["1"]
    broken[0] = False
    events = list(app.stream(None, config))
    state = events[-1].state
    assert sorted(searches) == ["q1", "q2"]  # each call ran once
    assert pairing_violations(state.context) == []
    assert [m.role for m in state.context] == ["user", "assistant", "tool", "tool"]
    assert state.hits == ["audited"]
