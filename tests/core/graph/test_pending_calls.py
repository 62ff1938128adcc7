"""A conversation that ends in tool calls without results (issue 17, capability 4).

Continuing such a thread without new messages runs the calls first, at the
graph's ToolNode, then the model reads their results (as Strands does with
``agent()``). New messages instead answer them as interrupted: the user moved
on. An input that itself ends in calls runs them first in create_agent's loop
(issue 37); a hand-built graph never runs them without a model asking for it.
"""

from __future__ import annotations

from typing import Any

from tenxgraph.core.graph import (
    Agent,
    StateGraph,
    ToolNode,
    before_agent,
    create_agent,
    tools_condition,
)
from tenxgraph.core.graph._tool_node import INTERRUPTED_CALL_TEXT
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ThreadKey, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.pairing import NOT_RUN_TEXT, is_paired
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer

CONFIG = {"thread_id": "pending"}
KEY = ThreadKey("pending")


class Weather:
    """A tool that counts its runs."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_weather(self, city: str) -> str:
        """Current weather for a city."""
        self.asked.append(city)
        return f"sunny in {city}"


def conversation(*calls: ToolCallBlock) -> list[Message]:
    calls = calls or (ToolCallBlock(id="c1", name="get_weather", args={"city": "Paris"}),)
    return [Message.text_message("Weather in Paris?"), Message(role="assistant", content=calls)]


async def log(checkpointer: Checkpointer) -> list[Message]:
    return [stored.message for stored in await checkpointer.alist_messages(KEY)]


async def test_continuing_a_conversation_that_ends_in_a_call_runs_it_first(
    checkpointer: Checkpointer,
) -> None:
    weather = Weather()
    model = ScriptedModel(["It is sunny in Paris."])
    app = create_agent(model, [weather.get_weather], checkpointer=checkpointer)
    await app.acreate_thread(CONFIG, conversation())

    result = await app.ainvoke(None, CONFIG)

    assert weather.asked == ["Paris"]
    [request] = model.requests
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.messages[-1].tool_results()[0].output == "sunny in Paris"
    assert result["messages"][-1].text() == "It is sunny in Paris."
    stored = await log(checkpointer)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert is_paired(stored)


async def test_new_messages_answer_the_calls_as_interrupted_instead(
    checkpointer: Checkpointer,
) -> None:
    weather = Weather()
    model = ScriptedModel(["Let me check again."])
    app = create_agent(model, [weather.get_weather], checkpointer=checkpointer)
    await app.acreate_thread(CONFIG, conversation())

    await app.ainvoke({"messages": [("user", "Never mind, and Rome?")]}, CONFIG)

    assert weather.asked == []
    seen = model.requests[0].messages
    assert [m.role for m in seen] == ["user", "assistant", "tool", "user"]
    [answer] = seen[2].tool_results()
    assert answer.call_id == "c1" and answer.is_error and answer.output == INTERRUPTED_CALL_TEXT
    assert is_paired(await log(checkpointer))


async def test_an_input_call_followed_by_a_user_message_is_stored_with_a_not_run_result(
    checkpointer: Checkpointer,
) -> None:
    """A client resending history with a call it never answered (issue 37)."""
    weather = Weather()
    model = ScriptedModel(["Rome is sunny.", "You are welcome."])
    app = create_agent(model, [weather.get_weather], checkpointer=checkpointer)
    history = [*conversation(), Message.text_message("Never mind, and Rome?")]

    first = await app.ainvoke({"messages": history}, CONFIG)

    assert weather.asked == []
    stored = await log(checkpointer)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "user", "assistant"]
    [answer] = stored[2].tool_results()
    assert answer.call_id == "c1" and answer.is_error and answer.output == NOT_RUN_TEXT
    assert is_paired(stored)
    assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "tool", "user"]

    resent = [*history, first["messages"][-1], Message.text_message("Thanks!")]
    await app.ainvoke({"messages": resent}, CONFIG)  # the same history again, one turn on

    again = await log(checkpointer)
    assert [m.message_id for m in again[:5]] == [m.message_id for m in stored]
    assert [m.role for m in again[5:]] == ["user", "assistant"]
    assert is_paired(again)


def test_results_sent_with_the_input_answer_their_calls() -> None:
    """Client-side tools: the caller runs the call and sends its result."""
    weather = Weather()
    model = ScriptedModel(["Thanks."])
    app = create_agent(model, [weather.get_weather], checkpointer=InMemoryCheckpointer())
    app.create_thread(
        CONFIG,
        conversation(
            ToolCallBlock(id="c1", name="get_weather", args={"city": "Paris"}),
            ToolCallBlock(id="c2", name="get_weather", args={"city": "Rome"}),
        ),
    )
    from_client = Message.tool_message([ToolResultBlock(call_id="c2", output="rain in Rome")])

    app.invoke({"messages": [from_client]}, CONFIG)

    assert weather.asked == []
    seen = model.requests[0].messages
    results = {b.call_id: b.output for m in seen for b in m.tool_results()}
    assert results == {"c1": INTERRUPTED_CALL_TEXT, "c2": "rain in Rome"}
    assert is_paired(seen)


def test_a_call_no_tool_node_can_run_is_answered_as_interrupted() -> None:
    model = ScriptedModel(["I cannot book that."])
    app = create_agent(model, [Weather().get_weather], checkpointer=InMemoryCheckpointer())
    app.create_thread(CONFIG, conversation(ToolCallBlock(id="b1", name="book_flight")))

    app.invoke(None, CONFIG)

    [answer] = model.requests[0].messages[-1].tool_results()
    assert answer.call_id == "b1" and answer.output == INTERRUPTED_CALL_TEXT


def test_an_approval_before_the_tools_still_applies() -> None:
    weather = Weather()
    graph = StateGraph(AgentState)
    graph.add_node("agent", Agent(ScriptedModel(["Sunny."]), tools=[weather.get_weather]))
    graph.add_node("tools", ToolNode([weather.get_weather]))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile(InMemoryCheckpointer(), interrupt_before=["tools"])
    app.create_thread(CONFIG, conversation())

    paused = app.invoke(None, CONFIG)
    assert paused["interrupt"] is not None and weather.asked == []
    done = app.invoke({"resume": "approved"}, CONFIG)
    assert weather.asked == ["Paris"]
    assert done["messages"][-1].text() == "Sunny."


async def test_an_input_that_ends_in_a_call_runs_it_then_calls_the_model_once(
    checkpointer: Checkpointer,
) -> None:
    """The model's turn was already taken: create_agent runs the call first (issue 37)."""
    weather = Weather()
    model = ScriptedModel(["It is sunny in Paris."])
    app = create_agent(model, [weather.get_weather], checkpointer=checkpointer)

    result = await app.ainvoke({"messages": conversation()}, CONFIG)

    assert weather.asked == ["Paris"]
    [request] = model.requests
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.messages[-1].tool_results()[0].output == "sunny in Paris"
    assert result["messages"][-1].text() == "It is sunny in Paris."
    stored = await log(checkpointer)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert is_paired(stored)


def test_before_agent_hooks_run_before_the_input_calls() -> None:
    weather = Weather()
    seen: list[str] = []

    @before_agent
    def note(state: AgentState) -> None:
        seen.append(f"hook, asked {weather.asked}")

    model = ScriptedModel(["Sunny."])
    app = create_agent(model, [weather.get_weather], middleware=[note])

    app.invoke({"messages": conversation()})

    assert seen == ["hook, asked []"] and weather.asked == ["Paris"]
    assert len(model.requests) == 1


def test_a_hand_built_graph_never_runs_a_call_that_comes_with_the_input() -> None:
    weather = Weather()
    model = ScriptedModel(["Hello."])
    graph = StateGraph(AgentState)
    graph.add_node("agent", Agent(model, tools=[weather.get_weather]))
    graph.add_node("tools", ToolNode([weather.get_weather]))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    app = graph.compile(InMemoryCheckpointer())

    app.invoke({"messages": conversation()}, CONFIG)  # a call the model never made

    assert weather.asked == []
    assert model.requests[0].messages[-1].tool_calls()  # the model reads it, and decides


def test_a_recorded_direct_call_answers_the_calls_first_as_new_messages_do() -> None:
    weather = Weather()
    app = create_agent(
        ScriptedModel([]), [weather.get_weather], checkpointer=InMemoryCheckpointer()
    )
    app.create_thread(CONFIG, conversation())

    app.call_tool("get_weather", {"city": "Oslo"}, CONFIG)

    assert weather.asked == ["Oslo"]
    state = app.get_state(CONFIG)
    assert state is not None and is_paired(state.context)
    results: list[Any] = [b.output for m in state.context for b in m.tool_results()]
    assert results == [INTERRUPTED_CALL_TEXT, "sunny in Oslo"]
