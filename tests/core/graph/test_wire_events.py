"""Stream events as JSON envelopes: kind, run id and sequence, one schema, a lossless round trip."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from tenxgraph.core.graph import StateGraph, interrupt
from tenxgraph.core.graph._wire import WIRE_EVENTS, event_schema, wire_events
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


def answer(state: AgentState) -> dict[str, Any]:
    return {"context": [Message.text_message("hello back", role="assistant")]}


def ask(state: AgentState) -> None:
    interrupt({"question": "go on?"})


def graph_of(*nodes: Any) -> Any:
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    names = []
    for node in nodes:
        graph.add_node(node.__name__, node)
        names.append(node.__name__)
    graph.set_entry_point(names[0])
    for first, second in itertools.pairwise(names):
        graph.add_edge(first, second)
    return graph.compile(InMemoryCheckpointer())


def collect(app: Any, run_id: str, config: dict[str, Any]) -> list[Any]:
    async def run() -> list[Any]:
        events = app.astream({"messages": [("user", "hi")]}, {**config, "run_id": run_id})
        return [event async for event in wire_events(events, run_id)]

    return asyncio.run(run())


def test_a_run_as_envelopes_round_trips_through_json() -> None:
    app = graph_of(answer)
    envelopes = collect(app, "run-1", {"thread_id": "t"})
    assert [e.kind for e in envelopes] == ["message", "update", "result"]
    assert [e.seq for e in envelopes] == [0, 1, 2]
    assert {e.run_id for e in envelopes} == {"run-1"}
    for envelope in envelopes:
        line = WIRE_EVENTS.dump_json(envelope)
        assert WIRE_EVENTS.validate_json(line) == envelope
    result = envelopes[-1]
    assert result.messages[0].text() == "hello back"
    assert result.state["execution_meta"]["status"] == "completed"
    assert not result.interrupted


def test_an_interrupted_run_says_so() -> None:
    app = graph_of(ask, answer)
    envelopes = collect(app, "run-2", {"thread_id": "t"})
    assert [e.kind for e in envelopes] == ["interrupt", "result"]
    assert envelopes[0].value == {"question": "go on?"}
    assert envelopes[-1].interrupted


def test_every_run_has_an_id() -> None:
    app = graph_of(answer)
    first = asyncio.run(_last(app.astream({"messages": [("user", "a")]}, {"thread_id": "x"})))
    second = asyncio.run(_last(app.astream({"messages": [("user", "b")]}, {"thread_id": "x"})))
    assert first.run_id and second.run_id and first.run_id != second.run_id


async def _last(events: Any) -> Any:
    return [event async for event in events][-1]


def test_the_schema_tells_kinds_apart() -> None:
    schema = event_schema()
    mapping = schema["discriminator"]["mapping"]
    assert sorted(mapping) == ["error", "interrupt", "message", "result", "update"]
    json.dumps(schema)  # plain JSON, ready to hand to a client generator
