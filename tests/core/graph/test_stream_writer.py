"""``get_stream_writer()``: nodes and tools stream data of their own as ``CustomEvent``s."""

from __future__ import annotations

import asyncio
import itertools
import threading
from typing import Any

import pytest

from tenxgraph.core.graph import (
    CustomEvent,
    MessageEvent,
    RunResult,
    Send,
    StateGraph,
    UpdateEvent,
    create_agent,
    get_stream_writer,
)
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, ToolCallBlock
from tenxgraph.errors import UsageError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import START


def _steps(*nodes: tuple[str, Any]) -> Any:
    graph = StateGraph(AgentState)
    for name, function in nodes:
        graph.add_node(name, function)
    names = [name for name, _ in nodes]
    graph.add_edge(START, names[0])
    for first, second in itertools.pairwise(names):
        graph.add_edge(first, second)
    return graph.compile()


def _kinds(events: list[Any]) -> list[tuple[str, str, Any]]:
    return [
        (type(e).__name__, e.node, getattr(e, "data", None))
        for e in events
        if isinstance(e, CustomEvent | UpdateEvent)
    ]


def test_a_sync_node_writes_before_its_update_in_order_and_named_by_node() -> None:
    def first(state: AgentState) -> None:
        write = get_stream_writer()
        write({"progress": 0.5})
        write("done")

    def second(state: AgentState) -> None:
        get_stream_writer()(["second"])

    events = list(_steps(("first", first), ("second", second)).stream({}))
    assert _kinds(events) == [
        ("CustomEvent", "first", {"progress": 0.5}),
        ("CustomEvent", "first", "done"),
        ("UpdateEvent", "first", None),
        ("CustomEvent", "second", ["second"]),
        ("UpdateEvent", "second", None),
    ]
    assert isinstance(events[-1], RunResult)


async def test_async_and_worker_thread_nodes_write_under_astream() -> None:
    async def waits(state: AgentState) -> None:
        get_stream_writer()("async")
        await asyncio.sleep(0)
        get_stream_writer()("after await")

    def threaded(state: AgentState) -> None:  # runs on a worker thread under astream
        get_stream_writer()("thread")

    app = _steps(("waits", waits), ("threaded", threaded))
    events = [e async for e in app.astream({})]
    written = [(e.node, e.data) for e in events if isinstance(e, CustomEvent)]
    assert written == [("waits", "async"), ("waits", "after await"), ("threaded", "thread")]


def test_invoke_has_no_reader_so_what_is_written_is_dropped() -> None:
    def node(state: AgentState) -> dict[str, Any]:
        get_stream_writer()("nobody reads this")
        return {"context": [("assistant", "ok")]}

    result = _steps(("node", node)).invoke({})
    assert [m.text() for m in result["messages"]] == ["ok"]


def test_outside_a_run_the_writer_is_refused() -> None:
    with pytest.raises(UsageError, match="inside a running node or tool"):
        get_stream_writer()


def test_a_tool_writes_during_its_call_named_by_its_tool_node() -> None:
    def lookup(city: str) -> str:
        """Look a city up.

        Args:
            city: The city.
        """
        get_stream_writer()({"looking up": city})
        return f"{city}: sunny"

    model = ScriptedModel([ToolCallBlock(id="c1", name="lookup", args={"city": "Oslo"}), "Sunny."])
    app = create_agent(model, tools=[lookup])
    events = list(app.stream({"messages": [("user", "weather?")]}))
    custom = [e for e in events if isinstance(e, CustomEvent)]
    assert [(e.node, e.data) for e in custom] == [("tools", {"looking up": "Oslo"})]
    index = events.index(custom[0])
    result = next(
        i for i, e in enumerate(events) if isinstance(e, MessageEvent) and e.message.role == "tool"
    )
    assert index < result  # written while the tool ran: before the step's result


def test_the_tasks_of_a_parallel_step_each_write_as_their_node() -> None:
    def fan(state: AgentState) -> list[Send]:
        return [Send("worker", n) for n in (1, 2, 3)]

    def worker(n: int) -> None:
        get_stream_writer()(n)

    graph = StateGraph(AgentState)
    graph.add_node("plan", lambda state: None)
    graph.add_node("worker", worker)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", fan)
    events = list(graph.compile(InMemoryCheckpointer()).stream({}, {"thread_id": "t"}))
    written = sorted(e.data for e in events if isinstance(e, CustomEvent))
    assert written == [1, 2, 3]
    assert {e.node for e in events if isinstance(e, CustomEvent)} == {"worker"}


def test_streamed_chunks_carry_the_id_the_stored_answer_gets() -> None:
    app = create_agent(ScriptedModel(["one two three"]), checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "ids"}
    events = list(app.stream({"messages": [("user", "hi")]}, config))
    chunks = [e.message for e in events if isinstance(e, MessageEvent) and e.message.delta]
    assert len(chunks) == 3
    stored = app.get_state(config).context[-1]
    assert {c.message_id for c in chunks} == {stored.message_id}


async def test_a_node_taking_a_writer_streams_while_it_still_runs() -> None:
    seen = asyncio.Event()

    async def progress(state: AgentState, writer: Any) -> None:
        writer("started")
        await seen.wait()  # goes on only once the consumer has the first piece
        writer("finished")

    app = _steps(("progress", progress))
    written = []
    async for event in app.astream({}):
        if isinstance(event, CustomEvent):
            written.append(event.data)
            seen.set()
    assert written == ["started", "finished"]


async def test_a_sync_node_taking_a_writer_streams_from_its_worker_thread() -> None:
    seen = threading.Event()

    def progress(state: AgentState, writer: Any) -> dict[str, Any]:
        writer("started")
        return {"context": [("assistant", f"consumer saw it: {seen.wait(30)}")]}

    events = []
    async for event in _steps(("progress", progress)).astream({}):
        events.append(event)
        if isinstance(event, CustomEvent):
            seen.set()
    assert events[-1].messages[-1].text() == "consumer saw it: True"


def test_a_writer_node_under_invoke_and_stop_while_it_waits() -> None:
    def quiet(state: AgentState, writer: Any) -> None:
        writer("dropped")

    assert _steps(("quiet", quiet)).invoke({})["messages"] == []

    async def forever(state: AgentState, writer: Any) -> None:
        writer("waiting")
        await asyncio.Event().wait()

    graph = StateGraph(AgentState)
    graph.add_node("forever", forever)
    graph.set_entry_point("forever")
    app, config = graph.compile(InMemoryCheckpointer()), {"thread_id": "stop"}

    async def main() -> RunResult:
        async for event in app.astream({}, config):
            if isinstance(event, CustomEvent):
                assert app.stop(config)
            elif isinstance(event, RunResult):
                return event
        raise AssertionError("no result")

    result = asyncio.run(main())
    assert result.state.execution_meta.status == "stopped"
