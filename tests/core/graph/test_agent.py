from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from pydantic import BaseModel

from tenxgraph.core import Agent, StateGraph
from tenxgraph.core.graph import MessageEvent, ToolNode, create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import (
    AgentState,
    Message,
    MessageContextManager,
    SummaryContextManager,
    ThreadKey,
    ToolCallBlock,
    ToolResult,
)
from tenxgraph.errors import ContextWindowExceededError, OutputValidationError, ToolError
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.utils import END


def test_spec_000_agent_example_constructs_and_compiles() -> None:
    # 000 "Keep context within the model window", as written
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=10))
    graph.add_node("MAIN", Agent(model="gemini-2.5-flash", trim_context=True))
    graph.set_entry_point("MAIN")
    assert graph.compile() is not None


def test_spec_001_examples_construct_and_run_with_a_test_model() -> None:
    context_manager = MessageContextManager(max_messages=10, remove_tool_msgs=False)
    agent = Agent(model="gemini-2.5-flash", trim_context=True)
    graph = StateGraph(context_manager=context_manager)
    graph.add_node("main", agent)
    graph.set_entry_point("main")
    graph.compile()

    summarizer = ScriptedModel(["Earlier: the user asked about 12 topics."])
    summary_manager = SummaryContextManager(
        model=summarizer, max_messages=30, token_budget=8000, keep_recent=8
    )
    answers = ScriptedModel([f"answer {i}" for i in range(20)])
    graph = StateGraph(context_manager=summary_manager)
    graph.add_node("main", Agent(model=answers, trim_context=True))
    graph.set_entry_point("main")
    app = graph.compile(checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "long"}
    for i in range(20):
        app.invoke({"messages": [Message.text_message(f"question {i}")]}, config)
    state = app.get_state(config)
    assert state is not None
    assert state.context_summary == "Earlier: the user asked about 12 topics."
    assert len(state.context) <= 30
    # the model saw the summary right after the system prompt, before the context
    last_request = answers.requests[-1]
    texts = [m.text() for m in last_request.messages]
    assert any("Earlier: the user asked" in t for t in texts)
    answers.assert_consumed()
    summarizer.assert_consumed()


def test_request_order_system_summary_context_and_usages() -> None:
    model = ScriptedModel(["hello"])
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model=model, system_prompt="Be brief."))
    graph.set_entry_point("main")
    app = graph.compile()
    result = app.invoke({"messages": [Message.text_message("hi")]})
    (request,) = model.requests
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].text() == "Be brief."
    answer = result["messages"][0]
    assert answer.role == "assistant"
    assert answer.usages is not None
    assert answer.usages.total_tokens > 0


def test_streaming_emits_deltas_that_are_never_stored() -> None:
    model = ScriptedModel(["a long streamed answer"])
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model=model))
    graph.set_entry_point("main")
    events = list(graph.compile().stream({"messages": [Message.text_message("hi")]}))
    deltas = [e.message for e in events if isinstance(e, MessageEvent) and e.message.delta]
    complete = [e.message for e in events if isinstance(e, MessageEvent) and not e.message.delta]
    assert len(deltas) >= 2
    assert "".join(d.text() for d in deltas) == "a long streamed answer"
    assert [m.text() for m in complete] == ["a long streamed answer"]
    final = events[-1].state  # type: ignore[union-attr]
    assert [m.delta for m in final.context] == [False, False]


class Weather(BaseModel):
    city: str
    celsius: float


def test_output_schema_parses_and_retries_once() -> None:
    model = ScriptedModel(['{"city": "Oslo"}', '{"city": "Oslo", "celsius": 4.5}'])
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model=model, output_schema=Weather))
    graph.set_entry_point("main")
    result = graph.compile().invoke({"messages": [Message.text_message("weather?")]})
    parsed = result["messages"][0].parsed_content
    assert parsed == Weather(city="Oslo", celsius=4.5)
    assert model.requests[0].output_schema == Weather.model_json_schema()
    assert "celsius: Field required" in model.requests[1].messages[-1].text()


def test_output_schema_fails_after_the_retry() -> None:
    model = ScriptedModel(["not json", '{"city": 1}'])
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model=model, output_schema=Weather))
    graph.set_entry_point("main")
    with pytest.raises(OutputValidationError, match="failed twice"):
        graph.compile().invoke({"messages": [Message.text_message("weather?")]})


def test_output_schema_with_tools_runs_the_tools_then_structures_the_final_answer() -> None:
    # issue 17 bug 1: an answer calling a tool was re-asked as bad structured output
    ran: list[str] = []

    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        ran.append(city)
        return 4.5

    def reply(request: ModelRequest) -> Message | str:
        results = [b for m in request.messages for b in m.tool_results()]
        if not results:
            call = ToolCallBlock(id="t1", name="thermometer", args={"city": "Oslo"})
            return Message(role="assistant", content=[call])
        return f'{{"city": "Oslo", "celsius": {results[0].output}}}'

    model = FunctionModel(reply)
    app = create_agent(model, [thermometer], output_schema=Weather)
    result = app.invoke({"messages": [Message.text_message("weather in Oslo?")]})
    assert ran == ["Oslo"]
    call, tool_message, final = result["messages"]
    assert [b.name for b in call.tool_calls()] == ["thermometer"]
    assert call.parsed_content is None
    assert tool_message.tool_results()[0].call_id == "t1"
    assert final.parsed_content == Weather(city="Oslo", celsius=4.5)
    assert result["structured_response"] == Weather(city="Oslo", celsius=4.5)
    assert len(model.requests) == 2  # no correction was asked for
    assert all(r.output_schema == Weather.model_json_schema() for r in model.requests)
    assert all([t.name for t in r.tools] == ["thermometer"] for r in model.requests)


def test_a_correction_answered_with_a_tool_call_runs_the_tool() -> None:
    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        return -2.0

    asking = ToolCallBlock(id="t1", name="thermometer", args={"city": "Oslo"})
    model = ScriptedModel(
        [
            "it is cold",
            Message(role="assistant", content=[asking]),
            '{"city": "Oslo", "celsius": -2}',
        ]
    )
    app = create_agent(model, [thermometer], output_schema=Weather)
    result = app.invoke({"messages": [Message.text_message("weather in Oslo?")]})
    assert [m.role for m in result["messages"]] == ["assistant", "tool", "assistant"]
    assert result["messages"][1].text() == "-2.0"
    assert result["structured_response"] == Weather(city="Oslo", celsius=-2)
    model.assert_consumed()


def test_trim_context_without_manager_warns_at_compile() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model=ScriptedModel([]), trim_context=True))
    graph.set_entry_point("main")
    with pytest.warns(UserWarning, match="no context manager"):
        graph.compile()


def test_trims_before_each_model_call_and_after_the_run() -> None:
    seen: list[int] = []

    def reply(request: ModelRequest) -> str:
        seen.append(sum(1 for m in request.messages if m.role == "user"))
        return "ok"

    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=2))
    graph.add_node("main", Agent(model=FunctionModel(reply), trim_context=True))
    graph.set_entry_point("main")
    checkpointer = InMemoryCheckpointer()
    app = graph.compile(checkpointer=checkpointer)
    config = {"thread_id": "trim"}
    for i in range(5):
        app.invoke({"messages": [Message.text_message(f"q{i}")]}, config)
    assert seen == [1, 2, 2, 2, 2]
    saved = app.get_state(config)
    assert saved is not None
    assert [m.text() for m in saved.context] == ["q3", "ok", "q4", "ok"]
    log = asyncio.run(checkpointer.alist_messages(ThreadKey("trim")))
    assert [stored.message.text() for stored in log][:2] == ["q0", "ok"]
    assert len(log) == 10  # trimming moved the window; the log keeps everything


def test_overflow_recovery_reduces_and_retries_once() -> None:
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=50))
    model = ScriptedModel([ContextWindowExceededError("too long"), "fits now"])
    graph.add_node("main", Agent(model=model, trim_context=True))
    graph.set_entry_point("main")
    seed = [
        Message.text_message(f"turn {i}", role="user" if i % 2 == 0 else "assistant")
        for i in range(20)
    ]
    result = graph.compile().invoke({"messages": seed})
    assert result["messages"][0].text() == "fits now"
    assert len(model.requests[1].messages) < len(model.requests[0].messages)


def test_overflow_twice_raises() -> None:
    model = ScriptedModel([ContextWindowExceededError("too long")] * 20)
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=50))
    graph.add_node("main", Agent(model=model, trim_context=True))
    graph.set_entry_point("main")
    seed = [Message.text_message(f"q{i}") for i in range(6)]
    with pytest.raises(ContextWindowExceededError, match=r"does not fit .* nothing more can be"):
        graph.compile().invoke({"messages": seed})


def test_graph_id_generator_names_agent_and_tool_messages() -> None:
    counter = itertools.count()

    def lookup(q: str) -> str:
        """Look something up."""
        return q.upper()

    model = ScriptedModel(
        [
            Message(
                role="assistant", content=[ToolCallBlock(id="c", name="lookup", args={"q": "x"})]
            ),
            "X",
        ]
    )
    graph = StateGraph(AgentState, id_generator=lambda: f"g-{next(counter)}")
    graph.add_node("agent", Agent(model=model, tool_node="tools"))
    graph.add_node("tools", ToolNode([lookup]))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", lambda s: "tools" if s.context[-1].tool_calls() else END)
    graph.add_edge("tools", "agent")
    result = graph.compile().invoke({"messages": [Message.text_message("go", message_id="in")]})
    assert [m.message_id for m in result["messages"]] == ["g-0", "g-1", "g-2"]
    assert [t.name for t in model.requests[0].tools] == ["lookup"]


def test_multi_turn_tool_agent_on_a_thread() -> None:
    class Cart(AgentState):
        items: list[str] = []

    def add_item(item: str, state: Cart) -> ToolResult:
        """Add an item to the cart."""
        return ToolResult(message=f"added {item}", state={"items": [*state.items, item]})

    def call(item: str, call_id: str) -> Message:
        return Message(
            role="assistant",
            content=[ToolCallBlock(id=call_id, name="add_item", args={"item": item})],
        )

    model = ScriptedModel([call("tea", "1"), "Added tea.", call("milk", "2"), "Added milk."])
    app = create_agent(model, [add_item], state=Cart, checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "cart"}
    app.invoke({"messages": [Message.text_message("add tea")]}, config)
    result = app.invoke({"messages": [Message.text_message("and milk")]}, config)
    assert result["state"].items == ["tea", "milk"]
    assert [m.text() for m in result["messages"]] == ["", "added milk", "Added milk."]
    model.assert_consumed()


def test_direct_tool_calls_recorded_or_not() -> None:
    class Notes(AgentState):
        notes: list[str] = []

    def note(text: str, state: Notes) -> ToolResult:
        """Keep a note."""
        return ToolResult(message=f"noted: {text}", state={"notes": [*state.notes, text]})

    checkpointer = InMemoryCheckpointer()
    app = create_agent(ScriptedModel([]), [note], state=Notes, checkpointer=checkpointer)
    config = {"thread_id": "notes"}
    result = app.call_tool("note", {"text": "first"}, config)
    assert result.output == "noted: first"
    saved = app.get_state(config)
    assert saved is not None
    assert saved.notes == ["first"]
    call_block, result_block = saved.context[0].content[0], saved.context[1].content[0]
    assert call_block.type == "tool_call"
    assert result_block.type == "tool_result"
    assert result_block.call_id == call_block.id

    unrecorded = app.call_tool("note", {"text": "second"}, config, record=False)
    assert unrecorded.output == "noted: second"
    again = app.get_state(config)
    assert again is not None
    assert again.notes == ["first"]
    assert len(again.context) == 2

    bad = app.call_tool("note", {}, config, record=False)
    assert bad.is_error
    with pytest.raises(ToolError, match="no tool 'nope'"):
        app.call_tool("nope", {}, config)


def test_invocation_state_is_returned_and_never_persisted() -> None:
    def whoami(invocation_state: dict[str, Any]) -> str:
        """Who is calling."""
        invocation_state["seen"] = True
        return str(invocation_state.get("user_id", "unknown"))

    model = ScriptedModel(
        [Message(role="assistant", content=[ToolCallBlock(id="w", name="whoami")]), "You are u-1."]
    )
    checkpointer = InMemoryCheckpointer()
    app = create_agent(model, [whoami], checkpointer=checkpointer)
    config = {"thread_id": "inv"}
    result = app.invoke(
        {"messages": [Message.text_message("Who am I?")]},
        config,
        invocation_state={"request_id": "r-42", "user_id": "u-1"},
    )
    assert result["invocation_state"] == {"request_id": "r-42", "user_id": "u-1", "seen": True}
    assert result["messages"][1].text() == "u-1"
    stored = checkpointer.get_state(config)
    assert stored is not None
    assert "r-42" not in stored.model_dump_json()


def test_an_agent_without_tools_answers_a_call_its_model_makes_anyway() -> None:
    model = ScriptedModel([ToolCallBlock(id="c1", name="lookup", args={"q": "x"}), "Sorry."])
    app = create_agent(model, checkpointer=InMemoryCheckpointer())
    result = app.invoke({"messages": [Message.text_message("hi")]}, {"thread_id": "t"})
    model.assert_consumed()
    [call, answer, final] = result["messages"]  # the turn's new messages
    assert [block.id for block in call.tool_calls()] == ["c1"]
    [block] = answer.tool_results()
    assert (block.call_id, block.is_error) == ("c1", True)
    assert "unknown tool 'lookup'" in str(block.output)
    assert final.text() == "Sorry."
    # The model was told: its second request holds the error result after the call.
    second = model.requests[1].messages
    assert second[-1].tool_results()[0].call_id == "c1"
