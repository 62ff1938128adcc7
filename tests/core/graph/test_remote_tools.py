"""Remote tools (issue 22): the model calls a tool the client runs; the run pauses until it answers.

The real agent loop runs with a scripted model; the pause is an interrupt
stored by the checkpointer, so a second graph object over the same storage
(another process) resumes it.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tenxgraph.core.graph import (
    Agent,
    InterruptEvent,
    RemoteTool,
    RunResult,
    StateGraph,
    ToolNode,
    create_agent,
    interrupt,
    pending_remote_calls,
    remote_tool_result,
    tools_condition,
)
from tenxgraph.core.graph._tool_node import INTERRUPTED_CALL_TEXT
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, RemoteToolCallBlock, ThreadKey, ToolCallBlock
from tenxgraph.core.state.pairing import is_paired
from tenxgraph.errors import GraphBuildError, StateError, ToolError
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer, ThreadWrite
from tests.storage.conftest import MakeCheckpointer

CONFIG = {"thread_id": "remote"}
KEY = ThreadKey("remote")
LOCATION = {
    "type": "object",
    "properties": {"accuracy": {"type": "string", "enum": ["fine", "coarse"]}},
    "required": ["accuracy"],
}


class Weather:
    """A local tool that counts its runs."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_weather(self, city: str) -> str:
        """Current weather for a city."""
        self.asked.append(city)
        return f"sunny in {city}"


def locate(timeout: float = 30.0) -> RemoteTool:
    return RemoteTool(
        "get_location", "The user's location, from the browser.", LOCATION, timeout=timeout
    )


def both_calls() -> Message:
    return Message(
        role="assistant",
        content=[
            ToolCallBlock(id="w1", name="get_weather", args={"city": "Paris"}),
            ToolCallBlock(id="r1", name="get_location", args={"accuracy": "fine"}),
        ],
    )


async def stored(checkpointer: Checkpointer) -> list[Message]:
    return [item.message for item in await checkpointer.alist_messages(KEY)]


def results_of(message: Message) -> list[tuple[str, Any, bool]]:
    return [(r.call_id, r.output, r.is_error) for r in message.tool_results()]


async def test_local_calls_run_then_the_run_pauses_for_the_remote_one_and_resumes(
    make_checkpointer: MakeCheckpointer, backend: str
) -> None:
    checkpointer = make_checkpointer()
    weather = Weather()
    model = ScriptedModel([both_calls(), "Sunny where you are."])
    app = create_agent(model, [weather.get_weather, locate()], checkpointer=checkpointer)

    before = datetime.now(UTC)
    paused = await app.ainvoke({"messages": [("user", "Weather here?")]}, CONFIG)

    assert weather.asked == ["Paris"]  # the local call of the same message ran
    assert {s.name: s.parameters for s in model.requests[0].tools}["get_location"] == LOCATION
    interrupt = paused["interrupt"]
    value = interrupt.value
    assert value["type"] == "remote_tool_calls"
    [entry] = value["calls"]
    assert entry["call"] == RemoteToolCallBlock(
        id="r1", name="get_location", args={"accuracy": "fine"}
    ).model_dump(mode="json")
    assert entry["timeout"] == 30.0
    deadline = datetime.fromisoformat(entry["deadline"])
    assert entry["deadline"].endswith("Z")
    assert before + timedelta(seconds=30) <= deadline <= datetime.now(UTC) + timedelta(seconds=30)
    assert [m.role for m in await stored(checkpointer)] == ["user", "assistant"]  # no result yet

    # another "process": a new graph object over the same storage lists and answers the call
    other = create_agent(
        ScriptedModel(["Sunny where you are."]),
        [Weather().get_weather, locate()],
        checkpointer=checkpointer if backend == "memory" else make_checkpointer(),
    )
    state = await other.aget_state(CONFIG)
    [pending] = pending_remote_calls(state)
    assert (pending.call.id, pending.deadline, pending.timeout) == ("r1", deadline, 30.0)

    resume = {"tool_results": [remote_tool_result("r1", {"lat": 48.85, "lon": 2.35})]}
    result = await other.ainvoke({"resume": resume}, CONFIG)

    assert result["messages"][-1].text() == "Sunny where you are."
    assert "__interrupt__" not in result or result["interrupt"] is None
    log = await stored(checkpointer)
    assert [m.role for m in log] == ["user", "assistant", "tool", "tool", "assistant"]
    assert results_of(log[2]) + results_of(log[3]) == [
        ("w1", "sunny in Paris", False),
        ("r1", {"lat": 48.85, "lon": 2.35}, False),
    ]
    assert is_paired(log)
    assert pending_remote_calls(await other.aget_state(CONFIG)) == []
    assert weather.asked == ["Paris"]  # the local call never ran twice


def paused_app(checkpointer: Checkpointer, *remote: RemoteTool, answers: int = 1) -> Any:
    calls = [
        ToolCallBlock(id=f"r{i}", name=t.name, args={"accuracy": "fine"})
        for i, t in enumerate(remote, 1)
    ]
    script: list[Any] = [Message(role="assistant", content=calls)]
    script += [f"answer {i}" for i in range(answers)]
    return create_agent(ScriptedModel(script), list(remote), checkpointer=checkpointer)


async def test_bad_results_are_refused_and_change_nothing() -> None:
    checkpointer = InMemoryCheckpointer()
    app = paused_app(checkpointer, locate())
    await app.ainvoke({"messages": [("user", "where am I?")]}, CONFIG)
    version = await checkpointer.aversion(KEY)

    bad: list[tuple[Any, str]] = [
        (
            {"tool_results": [remote_tool_result("nope", 1)]},
            "'nope' is not pending (pending: 'r1')",
        ),
        ({"tool_results": [remote_tool_result("r1", 1)] * 2}, "a second result for call 'r1'"),
        ("here", 'resume with {"tool_results"'),
        ({"tool_results": [{"call_id": "r1"}]}, "tool_results[0] must be a dict with 'call_id'"),
        ({"tool_results": [{"call_id": "r1", "output": 1, "x": 2}]}, "unknown key(s) ['x']"),
        ({"tool_results": [remote_tool_result("r1", float("nan"))]}, "tool_results[0].output"),
        ({"tool_results": [{"call_id": "r1", "output": 1, "is_error": "no"}]}, "is_error must be"),
    ]
    for resume, problem in bad:
        with pytest.raises(StateError) as raised:
            await app.ainvoke({"resume": resume}, CONFIG)
        assert problem in str(raised.value)
    with pytest.raises(StateError, match="resume with them, or send new messages without"):
        await app.ainvoke({"resume": None, "messages": [("user", "and?")]}, CONFIG)
    assert await checkpointer.aversion(KEY) == version
    assert [p.call.id for p in pending_remote_calls(await app.aget_state(CONFIG))] == ["r1"]

    result = await app.ainvoke(
        {"resume": {"tool_results": [remote_tool_result("r1", "x")]}}, CONFIG
    )
    assert result["messages"][-1].text() == "answer 0"


async def test_partial_answers_keep_the_rest_pending_with_their_deadlines() -> None:
    checkpointer = InMemoryCheckpointer()
    first, second = locate(), RemoteTool("get_time", "The browser's clock.", timeout=60)
    app = paused_app(checkpointer, first, second)
    await app.ainvoke({"messages": [("user", "where and when?")]}, CONFIG)
    deadlines = {p.call.id: p.deadline for p in pending_remote_calls(await app.aget_state(CONFIG))}

    paused = await app.ainvoke(
        {"resume": {"tool_results": [remote_tool_result("r2", "10:00")]}}, CONFIG
    )

    assert [c["call"]["id"] for c in paused["interrupt"].value["calls"]] == ["r1"]
    [left] = pending_remote_calls(await app.aget_state(CONFIG))
    assert left.deadline == deadlines["r1"]
    assert [m.role for m in await stored(checkpointer)] == ["user", "assistant"]

    await app.ainvoke(
        {"resume": {"tool_results": [remote_tool_result("r1", "Paris", is_error=False)]}}, CONFIG
    )
    log = await stored(checkpointer)
    assert [results_of(m) for m in log[2:4]] == [[("r1", "Paris", False)], [("r2", "10:00", False)]]
    assert is_paired(log)


async def test_unanswered_calls_time_out_on_the_next_continuation() -> None:
    checkpointer = InMemoryCheckpointer()
    app = paused_app(
        checkpointer, locate(timeout=0.05), RemoteTool("get_time", "Clock.", timeout=60)
    )
    await app.ainvoke({"messages": [("user", "where?")]}, CONFIG)
    await asyncio.sleep(0.1)

    paused = await app.ainvoke(None, CONFIG)  # r1 timed out; r2 still has time: paused again
    assert [c["call"]["id"] for c in paused["interrupt"].value["calls"]] == ["r2"]

    await app.ainvoke({"resume": {"tool_results": [remote_tool_result("r2", "10:00")]}}, CONFIG)
    log = await stored(checkpointer)
    assert results_of(log[2]) == [
        ("r1", "remote tool 'get_location' timed out after 0.05 s: the client sent no result", True)
    ]
    assert results_of(log[3]) == [("r2", "10:00", False)]


async def test_a_resume_after_the_deadline_answers_the_missing_calls_as_timed_out() -> None:
    checkpointer = InMemoryCheckpointer()
    app = paused_app(
        checkpointer, locate(timeout=0.05), RemoteTool("get_time", "Clock.", timeout=0.05)
    )
    await app.ainvoke({"messages": [("user", "where?")]}, CONFIG)
    await asyncio.sleep(0.1)

    result = await app.ainvoke(
        {"resume": {"tool_results": [remote_tool_result("r2", "late")]}}, CONFIG
    )

    assert result["messages"][-1].text() == "answer 0"
    log = await stored(checkpointer)
    assert [r[2] for m in log[2:4] for r in results_of(m)] == [True, False]
    assert "timed out after 0.05 s" in log[2].tool_results()[0].output


async def test_new_messages_answer_pending_calls_as_interrupted_or_timed_out() -> None:
    checkpointer = InMemoryCheckpointer()
    weather = Weather()
    model = ScriptedModel([both_calls(), "OK, Rome then."])
    app = create_agent(model, [weather.get_weather, locate()], checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "Weather here?")]}, CONFIG)

    await app.ainvoke({"messages": [("user", "Never mind, Rome?")]}, CONFIG)

    log = await stored(checkpointer)
    assert [m.role for m in log] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert results_of(log[2]) == [("w1", "sunny in Paris", False)]  # the local result is kept
    assert results_of(log[3]) == [("r1", INTERRUPTED_CALL_TEXT, True)]
    assert is_paired(log)
    assert pending_remote_calls(await app.aget_state(CONFIG)) == []


async def test_new_messages_after_the_deadline_answer_it_as_timed_out() -> None:
    checkpointer = InMemoryCheckpointer()
    app = paused_app(checkpointer, locate(timeout=0.05))
    await app.ainvoke({"messages": [("user", "where?")]}, CONFIG)
    await asyncio.sleep(0.1)

    await app.ainvoke({"messages": [("user", "hello?")]}, CONFIG)

    [result] = (await stored(checkpointer))[2].tool_results()
    assert result.is_error and "timed out after 0.05 s" in result.output


async def test_the_pause_streams_as_an_interrupt_event() -> None:
    app = paused_app(InMemoryCheckpointer(), locate())
    events = [e async for e in app.astream({"messages": [("user", "where?")]}, CONFIG)]

    interrupts = [e for e in events if isinstance(e, InterruptEvent)]
    assert [(e.when, e.value["calls"][0]["call"]["name"]) for e in interrupts] == [
        ("remote_tool_calls", "get_location")
    ]
    assert isinstance(events[-1], RunResult) and events[-1].interrupt is not None


async def test_bad_arguments_are_answered_without_asking_the_client() -> None:
    checkpointer = InMemoryCheckpointer()
    call = ToolCallBlock(id="r1", name="get_location", args={"accuracy": "exact"})
    model = ScriptedModel([Message(role="assistant", content=[call]), "Sorry."])
    app = create_agent(model, [locate()], checkpointer=checkpointer)

    result = await app.ainvoke({"messages": [("user", "where?")]}, CONFIG)

    assert "interrupt" not in result
    [answer] = (await stored(checkpointer))[2].tool_results()
    assert answer.is_error and "invalid arguments for remote tool 'get_location'" in answer.output


async def test_a_tool_node_in_a_hand_built_graph_pauses_too() -> None:
    checkpointer = InMemoryCheckpointer()
    tools = [Weather().get_weather, locate()]
    graph = StateGraph(AgentState)
    graph.add_node("agent", Agent(ScriptedModel([both_calls(), "done"]), tools=tools))
    graph.add_node("tools", ToolNode(tools))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile(checkpointer)

    paused = await app.ainvoke({"messages": [("user", "hi")]}, CONFIG)
    assert paused["interrupt"].node == "tools"
    result = await app.ainvoke({"resume": {"tool_results": [remote_tool_result("r1", 1)]}}, CONFIG)
    assert result["messages"][-1].text() == "done"


async def test_a_user_interrupt_shaped_like_the_remote_pause_stays_a_user_interrupt() -> None:
    copied = {"type": "remote_tool_calls", "calls": [{"call": {"id": "x"}, "deadline": "2000"}]}
    answers: list[Any] = []

    def ask(state: AgentState) -> dict[str, Any]:
        answers.append(interrupt(copied))
        return {}

    graph = StateGraph(AgentState)
    graph.add_node("ask", ask)
    graph.set_entry_point("ask")
    app = graph.compile(InMemoryCheckpointer())

    paused = await app.ainvoke({"messages": [("user", "hi")]}, CONFIG)
    assert paused["interrupt"].value == copied
    state = app.get_state(CONFIG)
    assert state is not None and state.execution_meta.interrupt_kind == "inside"
    assert pending_remote_calls(state) == []
    answer = {"tool_results": [remote_tool_result("x", 1)]}  # passed on as it is, not checked
    await app.ainvoke({"resume": answer}, CONFIG)
    assert answers == [answer]


async def test_the_remote_pause_is_marked_by_its_kind() -> None:
    app = paused_app(InMemoryCheckpointer(), locate())
    await app.ainvoke({"messages": [("user", "where?")]}, CONFIG)
    state = app.get_state(CONFIG)
    assert state is not None and state.execution_meta.interrupt_kind == "remote_tool_calls"
    [entry] = pending_remote_calls(state)
    assert pending_remote_calls(state.execution_meta) == [entry]
    state.execution_meta.interrupt_kind = "inside"  # the same value, not the runtime's pause
    assert pending_remote_calls(state.execution_meta) == []  # without the context: a question


async def save_as_inside(checkpointer: Checkpointer) -> None:
    """Rewrite the thread's saved pause as a row from before its kind existed had it."""
    stored = await checkpointer.aload(KEY)
    assert stored is not None
    values = copy.deepcopy(stored.values)
    assert values["execution_meta"]["interrupt_kind"] == "remote_tool_calls"
    values["execution_meta"]["interrupt_kind"] = "inside"
    write = ThreadWrite(
        stored.version, [], values, stored.window, "tools", 0,
        expected_incarnation=stored.incarnation,
    )  # fmt: skip
    await checkpointer.asave(KEY, write)


async def test_a_remote_pause_saved_as_inside_before_its_kind_existed_is_still_resumed() -> None:
    checkpointer = InMemoryCheckpointer()
    first, second = locate(), RemoteTool("get_time", "The browser's clock.", timeout=60)
    await paused_app(checkpointer, first, second).ainvoke({"messages": [("user", "hi")]}, CONFIG)
    await save_as_inside(checkpointer)

    tools = [first, second]
    app = create_agent(ScriptedModel(["answer 0"]), tools, checkpointer=checkpointer)
    state = await app.aget_state(CONFIG)
    assert state is not None and state.execution_meta.interrupt_kind == "inside"
    assert [p.call.id for p in pending_remote_calls(state)] == ["r1", "r2"]
    paused = await app.ainvoke(
        {"resume": {"tool_results": [remote_tool_result("r2", "10:00")]}}, CONFIG
    )
    assert [c["call"]["id"] for c in paused["interrupt"].value["calls"]] == ["r1"]
    state = await app.aget_state(CONFIG)
    assert state is not None and state.execution_meta.interrupt_kind == "remote_tool_calls"

    await save_as_inside(checkpointer)  # paused again, after a partial answer
    app = create_agent(ScriptedModel(["answer 0"]), tools, checkpointer=checkpointer)
    with pytest.raises(StateError, match="'r2' is not pending"):
        await app.ainvoke({"resume": {"tool_results": [remote_tool_result("r2", "again")]}}, CONFIG)
    result = await app.ainvoke(
        {"resume": {"tool_results": [remote_tool_result("r1", "Paris")]}}, CONFIG
    )

    assert result["messages"][-1].text() == "answer 0"
    log = await stored(checkpointer)
    assert [results_of(m) for m in log[2:4]] == [[("r1", "Paris", False)], [("r2", "10:00", False)]]
    assert is_paired(log)


async def test_an_inside_pause_listing_calls_the_thread_does_not_wait_for_stays_a_question() -> (
    None
):
    app = paused_app(InMemoryCheckpointer(), locate())
    await app.ainvoke({"messages": [("user", "where?")]}, CONFIG)
    state = app.get_state(CONFIG)
    assert state is not None
    meta = state.execution_meta
    meta.interrupt_kind = "inside"
    value = copy.deepcopy(meta.interrupt_value)
    assert isinstance(value, dict) and pending_remote_calls(state)
    call = value["calls"][0]["call"]
    for changed in ({"id": "other"}, {"name": "get_time"}):
        meta.interrupt_value = {
            **value,
            "calls": [{**value["calls"][0], "call": {**call, **changed}}],
        }
        assert pending_remote_calls(state) == []
    meta.interrupt_value = value
    meta.tool_ledger["r1"] = {"output": "done", "is_error": False, "update": {}}  # answered
    assert pending_remote_calls(state) == []
    del meta.tool_ledger["r1"]
    for broken in (
        {**value, "calls": [{"call": call}]},
        {**value, "calls": 3},
        {**value, "calls": []},
    ):
        meta.interrupt_value = broken
        assert pending_remote_calls(state) == []
    meta.interrupt_value = value
    assert pending_remote_calls(state)


def test_declaration_errors_name_the_tool() -> None:
    with pytest.raises(GraphBuildError, match=r"remote tool 'bad'.*properties.x.type"):
        RemoteTool("bad", "d", {"type": "object", "properties": {"x": {"type": "str"}}})
    with pytest.raises(GraphBuildError, match="remote tool 'flat': parameters must be an object"):
        RemoteTool("flat", "d", {"type": "string"})
    with pytest.raises(ToolError, match="timeout must be a positive"):
        RemoteTool("slow", "d", timeout=0)
    with pytest.raises(ToolError, match="must be 1-64 letters"):
        RemoteTool("no spaces", "d")
    with pytest.raises(GraphBuildError, match=r"remote tool.*'get_location'.*needs a checkpointer"):
        create_agent(ScriptedModel([]), [locate()])


def test_a_remote_tool_cannot_be_called_directly() -> None:
    app = create_agent(ScriptedModel([]), [locate()], checkpointer=InMemoryCheckpointer())
    with pytest.raises(ToolError, match="'get_location' is a remote tool"):
        app.call_tool("get_location", {"accuracy": "fine"}, CONFIG)
