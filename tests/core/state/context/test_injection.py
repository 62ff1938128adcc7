from __future__ import annotations

from tenxgraph.core.state import AgentState, messages_for_model, summary_message

from .convo import ids, roles, state_of, system, tool_turn, user


def test_without_a_summary_the_request_is_prompt_then_context() -> None:
    state = state_of(tool_turn(0))
    messages = messages_for_model(state, "You are helpful.")
    assert roles(messages) == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[0].text() == "You are helpful."
    assert messages[1:] == state.context


def test_the_summary_goes_between_the_system_prompt_and_the_context() -> None:
    rules = system("context rules")
    state = state_of([rules, *tool_turn(1)])
    state.context_summary = "The user lives in Tokyo."
    messages = messages_for_model(state, [system("agent prompt")])
    assert roles(messages) == [
        "system",
        "system",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    summary = messages[2]
    assert summary.text() == "Summary of the earlier conversation:\nThe user lives in Tokyo."
    assert summary.metadata == {"context_summary": True}
    assert ids(messages[3:]) == ids(state.context[1:])
    assert state.context[0] is rules and len(state.context) == 5  # state is not changed


def test_summary_message_is_an_assistant_message_with_a_stable_id() -> None:
    first, second = summary_message("s"), summary_message("s")
    assert first.role == "assistant" and first.message_id == second.message_id
    assert messages_for_model(AgentState(), ()) == []
    assert messages_for_model(state_of([user("hi")]))[0].text() == "hi"
