"""Many agents: names, agents as tools, handoffs (create_swarm), the supervisor pattern."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tenxgraph.core.graph import (
    HumanApproval,
    agent_tool,
    before_model,
    create_agent,
    create_supervisor,
    create_swarm,
)
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, ToolCallBlock, is_paired
from tenxgraph.errors import GraphBuildError
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer
from tests.core.graph import _handoff_kill_worker as worker
from tests.storage.conftest import process_spec, run_child


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def _call(call_id: str, name: str, **args: Any) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, args=args)


# --- names ----------------------------------------------------------------------------------


def test_an_agent_signs_what_it_writes() -> None:
    model = ScriptedModel([_call("w1", "get_weather", city="Oslo"), "Sunny."])
    app = create_agent(model, [get_weather], name="forecaster")
    result = app.invoke({"messages": [("user", "Oslo?")]})
    assert [m.metadata.get("agent") for m in result["messages"]] == [
        "forecaster",
        None,  # the tool's result answers the call, which is signed
        "forecaster",
    ]


@pytest.mark.parametrize("name", ["", "two words", "x" * 65, "dots.not.allowed"])
def test_a_name_that_cannot_be_part_of_a_tool_name_is_refused(name: str) -> None:
    with pytest.raises(GraphBuildError, match="agent name"):
        create_agent(ScriptedModel([]), name=name)


# --- agents as tools ------------------------------------------------------------------------


def _researcher(model: ScriptedModel, **options: Any) -> Any:
    return create_agent(model, [get_weather], name="researcher", **options)


def test_an_agent_tool_runs_its_own_loop_on_a_fresh_window() -> None:
    inner = ScriptedModel(
        [_call("w1", "get_weather", city="Oslo"), "Sunny in Oslo.", "Rain in Bergen."]
    )
    outer = ScriptedModel(
        [
            _call("r1", "researcher", request="Weather in Oslo?"),
            "Oslo is sunny.",
            _call("r2", "researcher", request="And Bergen?"),
            "Bergen is rainy.",
        ]
    )
    tool = agent_tool(_researcher(inner), description="Finds facts.")
    app = create_agent(outer, [tool], name="lead", checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "t"}
    app.invoke({"messages": [("user", "Weather in Oslo?")]}, config)
    app.invoke({"messages": [("user", "And Bergen?")]}, config)

    assert [m.role for m in inner.requests[2].messages] == ["user"]  # fresh on each call
    state = app.get_state(config)
    assert is_paired(state.context)
    assert all(m.metadata.get("agent_tool") is None for m in state.context)  # not mixed in
    kept = state.agent_messages
    assert [(m.metadata.get("agent"), m.metadata["agent_call"]) for m in kept] == [
        (None, "r1"),
        ("researcher", "r1"),
        (None, "r1"),
        ("researcher", "r1"),
        (None, "r2"),
        ("researcher", "r2"),
    ]
    results = [r.output for m in state.context for r in m.tool_results()]
    assert results == ["Sunny in Oslo.", "Rain in Bergen."]
    spec = outer.requests[0].tools[0]
    assert (spec.name, spec.description) == ("researcher", "Finds facts.")
    assert list(spec.parameters["properties"]) == ["request"]


def test_keep_context_gives_the_agent_its_earlier_calls() -> None:
    inner = ScriptedModel(["Noted: Oslo.", "You asked about Oslo."])
    outer = ScriptedModel(
        [
            _call("r1", "researcher", request="Remember Oslo"),
            "Done.",
            _call("r2", "researcher", request="What did I ask?"),
            "Oslo.",
        ]
    )
    tool = agent_tool(_researcher(inner), keep_context=True)
    app = create_agent(outer, [tool], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "kept"}
    app.invoke({"messages": [("user", "Remember Oslo")]}, config)
    app.invoke({"messages": [("user", "What did I ask?")]}, config)
    assert [m.text() for m in inner.requests[1].messages] == [
        "Remember Oslo",
        "Noted: Oslo.",
        "What did I ask?",
    ]


class Forecast(BaseModel):
    city: str
    sky: str


def test_structured_output_is_the_result_and_full_history_a_transcript() -> None:
    inner = ScriptedModel(['{"city": "Oslo", "sky": "clear"}'])
    outer = ScriptedModel([_call("r1", "researcher", request="Oslo"), "Clear."])
    tool = agent_tool(_researcher(inner, output_schema=Forecast))
    create_agent(outer, [tool]).invoke({"messages": [("user", "Oslo?")]})
    [result] = [m for m in outer.requests[1].messages if m.role == "tool"]
    assert result.tool_results()[0].output == {"city": "Oslo", "sky": "clear"}

    inner = ScriptedModel([_call("w1", "get_weather", city="Oslo"), "Sunny."])
    outer = ScriptedModel([_call("r1", "researcher", request="Oslo"), "Sunny."])
    tool = agent_tool(_researcher(inner), output="full_history", keep_messages=False)
    result = create_agent(outer, [tool]).invoke({"messages": [("user", "Oslo?")]})
    transcript = result["messages"][1].text()
    assert transcript.splitlines() == [
        '[researcher] calls get_weather({"city": "Oslo"})',
        "[tool] sunny in Oslo",
        "[researcher] Sunny.",
    ]
    assert result["state"].agent_messages == []


def test_agent_tools_are_checked_when_built() -> None:
    with pytest.raises(GraphBuildError, match="needs a name"):
        agent_tool(create_agent(ScriptedModel([])))
    with pytest.raises(GraphBuildError, match="without a checkpointer"):
        agent_tool(_researcher(ScriptedModel([]), checkpointer=InMemoryCheckpointer()))


def test_supervisor_routes_to_workers_and_composes() -> None:
    math = create_agent(ScriptedModel(["4"]), name="math")
    poet = create_agent(ScriptedModel(["Two and two, a pair of pairs."]), name="poet")
    model = ScriptedModel(
        [
            [_call("m1", "math", request="2+2?"), _call("p1", "poet", request="A line on 2+2")],
            "2+2 is 4. Two and two, a pair of pairs.",
        ]
    )
    app = create_supervisor(model, [math, poet], system_prompt="Delegate, then answer.")
    result = app.invoke({"messages": [("user", "2+2, with a poem")]})
    assert result["messages"][-1].text() == "2+2 is 4. Two and two, a pair of pairs."
    assert result["messages"][-1].metadata["agent"] == "supervisor"
    assert [t.name for t in model.requests[0].tools] == ["math", "poet"]
    assert {m.metadata["agent_tool"] for m in result["state"].agent_messages} == {"math", "poet"}


# --- handoffs -------------------------------------------------------------------------------


def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def _support(checkpointer: Checkpointer) -> tuple[Any, ScriptedModel]:
    billing_model = ScriptedModel(["Order 42 shipped; nothing is due.", "You are welcome."])
    members = [
        create_agent(ScriptedModel([_call("h1", "transfer_to_orders")]), name="triage"),
        create_agent(
            ScriptedModel([_call("l1", "lookup", order="42"), _call("h2", "transfer_to_billing")]),
            [lookup],
            name="orders",
            system_prompt="You track orders.",
        ),
        create_agent(billing_model, name="billing", system_prompt="You handle money."),
    ]
    return create_swarm(members, checkpointer=checkpointer), billing_model


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
async def stored(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[Checkpointer]:
    async with process_spec(request.param, tmp_path, pg_schema, redis_prefix) as spec:
        checkpointer = worker.open_checkpointer(spec)
        try:
            yield checkpointer
        finally:
            await checkpointer.aclose()


async def test_a_chain_of_three_agents_hands_over_and_the_next_turn_stays(
    stored: Checkpointer,
) -> None:
    app, billing_model = _support(stored)
    config = {"thread_id": "support"}
    await app.ainvoke({"messages": [("user", "Where is order 42?")]}, config)
    state = await app.aget_state(config)
    assert state.active_agent == "billing"
    assert [(m.role, m.metadata.get("agent"), m.text()) for m in state.context] == [
        ("user", None, "Where is order 42?"),
        ("assistant", "triage", ""),
        ("tool", None, "transferred to orders"),
        ("assistant", "orders", ""),
        ("tool", None, "order 42: shipped"),
        ("assistant", "orders", ""),
        ("tool", None, "transferred to billing"),
        ("assistant", "billing", "Order 42 shipped; nothing is due."),
    ]
    assert is_paired(state.context)
    seen = billing_model.requests[0]
    assert seen.messages[0].text() == "You handle money."  # its own prompt, the shared history
    assert [t.name for t in seen.tools] == ["transfer_to_triage", "transfer_to_orders"]

    result = await app.ainvoke({"messages": [("user", "Thanks!")]}, config)  # a new turn
    assert result["messages"][-1].text() == "You are welcome."
    assert result["messages"][-1].metadata["agent"] == "billing"


def test_only_the_first_handoff_of_an_answer_counts() -> None:
    both = [_call("h1", "transfer_to_a"), _call("h2", "transfer_to_b")]
    members = [
        create_agent(ScriptedModel([both]), name="desk"),
        create_agent(ScriptedModel(["a here"]), name="a"),
        create_agent(ScriptedModel([]), name="b"),
    ]
    result = create_swarm(members).invoke({"messages": [("user", "hi")]})
    assert result["state"].active_agent == "a"
    assert result["messages"][-1].text() == "a here"
    [first, second] = [r for m in result["state"].context for r in m.tool_results()]
    assert not first.is_error and second.is_error
    assert "transfer_to_a came first" in second.output


@before_model
def noop(state: AgentState) -> None:
    return None


def test_swarms_are_checked_when_built() -> None:
    one = create_agent(ScriptedModel([]), name="one")
    with pytest.raises(GraphBuildError, match="needs a name"):
        create_swarm([one, create_agent(ScriptedModel([]))])
    with pytest.raises(GraphBuildError, match="two agents of the swarm are named 'one'"):
        create_swarm([one, one])
    with pytest.raises(GraphBuildError, match="run as nodes"):
        create_swarm([one, create_agent(ScriptedModel([]), name="two", middleware=[noop])])
    with pytest.raises(GraphBuildError, match="default 'three'"):
        create_swarm([one], default="three")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def spec(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[dict[str, Any]]:
    async with process_spec(request.param, tmp_path, pg_schema, redis_prefix) as spec:
        yield spec


@pytest.mark.parametrize("kill_at", ["handoff", "next_agent"])
async def test_a_kill_mid_handoff_resumes_with_the_right_agent(
    spec: dict[str, Any], tmp_path: Path, kill_at: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    spec = {**spec, "kill_at": kill_at}
    assert await run_child(worker.run_then_die, spec, work) == -signal.SIGKILL
    assert await run_child(worker.resume, spec, work) == 0

    checkpointer = worker.open_checkpointer(spec)
    try:
        app = worker.swarm(checkpointer, work, None)
        state = await app.aget_state(worker.CONFIG)
    finally:
        await checkpointer.aclose()
    assert state.execution_meta.status == "completed"
    assert state.active_agent == "billing"
    assert [(m.role, m.metadata.get("agent"), m.text()) for m in state.context] == [
        ("user", None, "Where is order 42, and do I owe anything?"),
        ("assistant", "triage", ""),
        ("tool", None, "transferred to orders"),
        ("assistant", "orders", ""),
        ("tool", None, "order 42: shipped"),
        ("assistant", "orders", ""),
        ("tool", None, "transferred to billing"),
        ("assistant", "billing", worker.ANSWER),
    ]
    assert is_paired(state.context)
    assert (work / "lookups.log").read_text().splitlines() == ["42"]  # the lookup ran once


def test_swarm_middleware_approves_tool_calls_of_every_member() -> None:
    seen: list[str] = []

    @before_model
    def note(state: AgentState) -> None:
        seen.append(state.active_agent or "-")

    members = [
        create_agent(ScriptedModel([_call("h1", "transfer_to_orders")]), name="triage"),
        create_agent(
            ScriptedModel([_call("l1", "lookup", order="42"), "Shipped."]), [lookup], name="orders"
        ),
    ]
    app = create_swarm(
        members,
        middleware=[HumanApproval(["lookup", "transfer_to_orders"]), note],
        checkpointer=InMemoryCheckpointer(),
    )
    config = {"thread_id": "approved"}
    paused = app.invoke({"messages": [("user", "Where is order 42?")]}, config)
    assert [c["name"] for c in paused["interrupt"].value["calls"]] == ["transfer_to_orders"]
    paused = app.invoke({"resume": "approve"}, config)
    assert [c["name"] for c in paused["interrupt"].value["calls"]] == ["lookup"]
    result = app.invoke(
        {"resume": {"decisions": [{"type": "reject", "message": "not now"}]}}, config
    )
    assert result["messages"][-1].text() == "Shipped."
    state = app.get_state(config)
    assert state.active_agent == "orders"
    assert is_paired(state.context)
    assert "not now" in [m for m in state.context if m.role == "tool"][-1].text()
    assert seen == ["-", "orders", "orders"]


def test_each_agent_reads_the_shared_history_through_its_own_context_manager() -> None:
    from tenxgraph.core.state.context.trimming import MessageContextManager

    short_model = ScriptedModel(["short 1", "short 2", _call("h1", "transfer_to_long")])
    long_model = ScriptedModel(["long 1"])
    short = create_agent(
        short_model,
        name="short",
        context_manager=MessageContextManager(max_messages=1),
        trim_context=True,
    )
    app = create_swarm(
        [short, create_agent(long_model, name="long")], checkpointer=InMemoryCheckpointer()
    )
    config = {"thread_id": "windows"}
    for text in ("one", "two", "three"):
        app.invoke({"messages": [("user", text)]}, config)
    assert [m.text() for m in short_model.requests[2].messages] == ["three"]  # its own window
    seen = [m.text() for m in long_model.requests[0].messages]
    assert seen[:4] == ["one", "short 1", "two", "short 2"]  # the whole shared history
    state = app.get_state(config)
    assert len(state.context) == 8 and is_paired(state.context)


def test_a_tool_of_your_own_hands_over_by_setting_active_agent() -> None:
    from tenxgraph.core.state import ToolResult

    def escalate(reason: str) -> ToolResult:
        """Give the conversation to a person at billing."""
        return ToolResult(f"escalated: {reason}", {"active_agent": "billing"})

    members = [
        create_agent(
            ScriptedModel([_call("e1", "escalate", reason="refund over limit")]),
            [escalate],
            name="desk",
        ),
        create_agent(ScriptedModel(["Billing here, refund approved."]), name="billing"),
    ]
    result = create_swarm(members).invoke({"messages": [("user", "refund please")]})
    assert result["state"].active_agent == "billing"
    assert result["messages"][-1].text() == "Billing here, refund approved."


def test_keep_context_in_a_graph_without_the_field_is_a_clear_tool_error() -> None:
    from tenxgraph.core.graph import StateGraph, ToolNode

    tool = agent_tool(_researcher(ScriptedModel([])), keep_context=True)
    graph = StateGraph(AgentState)
    graph.add_node(
        "ask",
        lambda state: [{"role": "assistant", "content": [_call("r1", "researcher", request="hi")]}],
    )
    graph.add_node("tools", ToolNode([tool]))
    graph.set_entry_point("ask")
    graph.add_edge("ask", "tools")
    result = graph.compile().invoke({"messages": [("user", "hi")]})
    [failed] = result["messages"][-1].tool_results()
    assert failed.is_error and "add AgentMessages to the state class" in failed.output


def test_an_agent_tool_of_a_swarm_member_keeps_its_messages() -> None:
    helper = create_agent(ScriptedModel(["42"]), name="helper")
    member = create_agent(
        ScriptedModel([_call("q1", "helper", request="6 x 7?"), "It is 42."]),
        [agent_tool(helper)],
        name="solo",
    )
    result = create_swarm([member]).invoke({"messages": [("user", "6 x 7?")]})
    assert result["messages"][-1].text() == "It is 42."
    assert [m.text() for m in result["state"].agent_messages] == ["6 x 7?", "42"]
