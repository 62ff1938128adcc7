"""A forced tool choice holds until the forced tool has answered in the current turn.

Before, ``create_agent(..., tool_choice=<tool>)`` sent the forced choice on
every model call, so a model that obeys it (every provider, and the local
model) called the tool forever, until ``RecursionLimitError``.
"""

from __future__ import annotations

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.graph._agent import turn_tool_choice
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock, ToolResult
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer


class TripState(AgentState):
    selected_city: str = ""


def select_city(city: str) -> ToolResult:
    """Select the city the user wants to visit."""
    return ToolResult(message=f"City set to {city}.", state={"selected_city": city})


def look_up(topic: str) -> str:
    """Look a topic up."""
    return f"nothing on {topic}"


def obedient(request: ModelRequest) -> Message | str:
    """Like a provider: a forced choice is always obeyed, ``auto`` answers in text."""
    if request.tool_choice in ("auto", "none"):
        return f"Done after {len(request.messages)} messages."
    name = request.tools[0].name if request.tool_choice == "required" else request.tool_choice
    call_id = f"call-{len(request.messages)}"
    return Message(
        role="assistant",
        content=[ToolCallBlock(id=call_id, name=name, args={"city": "Lisbon"})],
    )


def user(text: str) -> Message:
    return Message.text_message(text)


def called(name: str, call_id: str) -> Message:
    return Message(role="assistant", content=[ToolCallBlock(id=call_id, name=name, args={})])


def answered(call_id: str) -> Message:
    return Message.tool_message([ToolResultBlock(call_id=call_id, output="ok")])


@pytest.mark.parametrize("choice", ["select_city", "required"])
def test_a_forced_tool_is_called_once_per_turn_and_the_loop_ends(choice: str) -> None:
    model = FunctionModel(obedient)
    app = create_agent(
        model,
        [select_city],
        state=TripState,
        tool_choice=choice,
        checkpointer=InMemoryCheckpointer(),
    )
    config = {"thread_id": "trip"}
    first = app.invoke({"messages": [user("Pick Lisbon for me")]}, config)
    assert first["state"].selected_city == "Lisbon"
    assert [m.role for m in first["messages"]] == ["assistant", "tool", "assistant"]
    assert first["messages"][-1].text() == "Done after 3 messages."
    # a new turn forces the tool again, once
    second = app.invoke({"messages": [user("Lisbon again, please")]}, config)
    assert [m.role for m in second["messages"]] == ["assistant", "tool", "assistant"]
    assert [r.tool_choice for r in model.requests] == [choice, "auto", choice, "auto"]
    assert all(r.tools for r in model.requests)  # the tools are still offered with auto


def test_the_model_may_call_tools_again_on_its_own_after_the_forced_one() -> None:
    model = ScriptedModel(
        [
            Message(
                role="assistant",
                content=[ToolCallBlock(id="1", name="select_city", args={"city": "Rome"})],
            ),
            Message(
                role="assistant",
                content=[ToolCallBlock(id="2", name="look_up", args={"topic": "Rome"})],
            ),
            "Rome it is.",
        ]
    )
    app = create_agent(model, [select_city, look_up], state=TripState, tool_choice="select_city")
    with model:
        result = app.invoke({"messages": [user("Rome")]})
    assert result["state"].selected_city == "Rome"
    assert [r.tool_choice for r in model.requests] == ["select_city", "auto", "auto"]


def test_forcing_holds_until_the_forced_tool_itself_has_answered() -> None:
    model = ScriptedModel(
        [
            Message(
                role="assistant",
                content=[ToolCallBlock(id="1", name="look_up", args={"topic": "x"})],
            ),
            Message(
                role="assistant",
                content=[ToolCallBlock(id="2", name="select_city", args={"city": "Oslo"})],
            ),
            "Oslo.",
        ]
    )
    app = create_agent(model, [select_city, look_up], state=TripState, tool_choice="select_city")
    with model:
        app.invoke({"messages": [user("Oslo")]})
    assert [r.tool_choice for r in model.requests] == ["select_city", "select_city", "auto"]


def test_the_rule_reads_only_the_current_turn() -> None:
    earlier = [
        user("first"),
        called("select_city", "a"),
        answered("a"),
        Message.text_message("ok", role="assistant"),
    ]
    assert turn_tool_choice("select_city", earlier[:1]) == "select_city"
    assert turn_tool_choice("select_city", earlier) == "auto"  # answered in this turn
    assert turn_tool_choice("select_city", [*earlier, user("again")]) == "select_city"
    pending = [*earlier, user("again"), called("select_city", "b")]
    assert turn_tool_choice("select_city", pending) == "select_city"  # no result yet
    assert turn_tool_choice("select_city", [*pending, answered("b")]) == "auto"
    other = [*earlier, user("again"), called("look_up", "c"), answered("c")]
    assert turn_tool_choice("select_city", other) == "select_city"
    assert turn_tool_choice("required", other) == "auto"
    assert turn_tool_choice("none", other) == "none"
    assert turn_tool_choice("auto", earlier) == "auto"
    # without any user message the whole context is the turn
    assert turn_tool_choice("select_city", [called("select_city", "d"), answered("d")]) == "auto"


@pytest.mark.local_model
def test_local_model_forced_tool_loop_ends() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    app = create_agent(
        "local",
        [select_city],
        state=TripState,
        tool_choice="select_city",
        temperature=0.0,
        max_tokens=32,
        recursion_limit=8,
    )
    result = app.invoke({"messages": [user("Pick Lisbon for me")]})
    # forced again after the result, SmolLM2 would call the tool until the recursion limit
    assert [m.role for m in result["messages"]] == ["assistant", "tool", "assistant"]
    assert result["state"].selected_city
    assert result["messages"][-1].text().strip()
