"""An agent tool's agent inside its caller's run: its stream, namespaced by the call; its pauses."""

from __future__ import annotations

import asyncio
from typing import Any

from tenxgraph.core.graph import (
    CustomEvent,
    HumanApproval,
    MessageEvent,
    SubgraphEvent,
    UpdateEvent,
    agent_tool,
    create_agent,
    create_supervisor,
    create_swarm,
    get_stream_writer,
)
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import ToolCallBlock, is_paired
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def _call(call_id: str, name: str, **args: Any) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, args=args)


def _lead() -> Any:
    inner = ScriptedModel([_call("w1", "get_weather", city="Oslo"), "Sunny in Oslo."])
    researcher = create_agent(inner, [get_weather], name="researcher")
    outer = ScriptedModel([_call("r1", "researcher", request="Oslo?"), "It is sunny."])
    return create_agent(outer, [agent_tool(researcher)], name="lead")


def test_the_inner_agents_tokens_reach_the_outer_stream_under_the_call() -> None:
    events = list(_lead().stream({"messages": [("user", "Oslo?")]}, subgraphs=True))
    nested = [e for e in events if isinstance(e, SubgraphEvent)]
    assert {e.namespace for e in nested} == {("tools", "researcher:r1")}
    deltas = [e.event.message.text() for e in nested if _is_delta(e.event)]
    assert "".join(deltas) == "Sunny in Oslo."
    inner_nodes = [e.event.node for e in nested if isinstance(e.event, UpdateEvent)]
    assert inner_nodes == ["agent", "tools", "agent"]  # the inner loop, step by step
    whole = [e.event.message for e in nested if isinstance(e.event, MessageEvent)]
    answers = [m for m in whole if m.role == "assistant" and not m.delta]
    assert [m.metadata.get("agent") for m in answers] == ["researcher", "researcher"]
    # all of it comes while the call runs: before the tools node's own result
    result_at = next(
        i for i, e in enumerate(events) if isinstance(e, MessageEvent) and e.node == "tools"
    )
    assert all(events.index(e) < result_at for e in nested)


def test_without_subgraphs_the_stream_is_the_callers_own() -> None:
    events = list(_lead().stream({"messages": [("user", "Oslo?")]}))
    assert not any(isinstance(e, SubgraphEvent) for e in events)
    assert events[-1].messages[-1].text() == "It is sunny."  # type: ignore[union-attr]


def test_workers_of_one_answer_stream_each_under_its_own_call() -> None:
    math = create_agent(ScriptedModel(["four"]), name="math")
    poet = create_agent(ScriptedModel(["two and two"]), name="poet")
    both = [_call("m1", "math", request="2+2"), _call("p1", "poet", request="a line")]
    app = create_supervisor(ScriptedModel([both, "four; two and two"]), [math, poet])
    events = list(app.stream({"messages": [("user", "2+2 in verse")]}, subgraphs=True))
    said: dict[tuple[str, ...], str] = {}
    for event in events:
        if isinstance(event, SubgraphEvent) and _is_delta(event.event):
            said[event.namespace] = said.get(event.namespace, "") + event.event.message.text()
    assert said == {("tools", "math:m1"): "four", ("tools", "poet:p1"): "two and two"}


def test_an_agent_tool_inside_an_agent_tool_and_a_swarm_members_namespaces() -> None:
    helper = create_agent(ScriptedModel(["42"]), name="helper")
    middle = create_agent(
        ScriptedModel([_call("h1", "helper", request="6x7"), "It is 42."]),
        [agent_tool(helper)],
        name="middle",
    )
    member = create_agent(
        ScriptedModel([_call("m1", "middle", request="6x7?"), "42, says middle."]),
        [agent_tool(middle)],
        name="solo",
    )
    app = create_swarm([member])
    events = list(app.stream({"messages": [("user", "6x7?")]}, subgraphs=True))
    spaces = {e.namespace for e in events if isinstance(e, SubgraphEvent)}
    assert spaces == {
        ("solo.tools", "middle:m1"),
        ("solo.tools", "middle:m1", "tools", "helper:h1"),
    }


async def test_what_the_inner_tools_write_is_streamed_while_the_call_runs() -> None:
    released = asyncio.Event()

    async def gate() -> str:
        """Wait for a go."""
        get_stream_writer()({"waiting": True})
        await asyncio.wait_for(released.wait(), 60)  # set by the reader of the outer stream
        return "went"

    inner = create_agent(ScriptedModel([_call("g1", "gate"), "Went."]), [gate], name="waiter")
    outer = ScriptedModel([_call("c1", "waiter", request="go"), "Done."])
    app = create_agent(outer, [agent_tool(inner)])
    seen: list[Any] = []
    async for event in app.astream({"messages": [("user", "go")]}, subgraphs=True):
        if isinstance(event, SubgraphEvent) and isinstance(event.event, CustomEvent):
            seen.append((event.namespace, event.event.node, event.event.data))
            released.set()  # the tool is still waiting: the event came while it ran
    assert seen == [(("tools", "waiter:c1"), "tools", {"waiting": True})]
    state = event.state  # type: ignore[union-attr]
    results = [r.output for m in state.context for r in m.tool_results()]
    assert results == ["Went."]


def _is_delta(event: object) -> bool:
    return isinstance(event, MessageEvent) and event.message.delta


# --- a person approving inside an agent tool ------------------------------------------------


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _cleaner(name: str) -> Any:
    model = ScriptedModel([_call("d1", "delete", path=name), f"Deleted {name}."])
    return create_agent(model, [delete], name=name, middleware=[HumanApproval(["delete"])])


def test_an_approval_inside_an_agent_tool_pauses_the_caller_and_resumes_inside() -> None:
    outer = ScriptedModel([_call("c1", "a", request="delete a"), "Done."])
    app = create_agent(outer, [agent_tool(_cleaner("a"))], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "inner-approval"}
    paused = app.invoke({"messages": [("user", "clean")]}, config)
    assert paused["interrupt"].value["calls"] == [
        {"id": "d1", "name": "delete", "args": {"path": "a"}}
    ]
    result = app.invoke({"resume": "approve"}, config)
    assert [m.text() for m in result["messages"]] == ["Deleted a.", "Done."]
    assert is_paired(app.get_state(config).context)


def test_only_the_first_agent_call_of_an_answer_may_pause() -> None:
    both = [_call("c1", "a", request="delete a"), _call("c2", "b", request="delete b")]
    tools = [agent_tool(_cleaner("a")), agent_tool(_cleaner("b"))]
    app = create_agent(ScriptedModel([both, "Done."]), tools, checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "two-pauses"}
    app.invoke({"messages": [("user", "clean")]}, config)
    result = app.invoke({"resume": "approve"}, config)
    first, second = [r for m in result["messages"] for r in m.tool_results()]
    assert first.output == "Deleted a."
    assert second.is_error and "its agent paused for a person" in second.output
