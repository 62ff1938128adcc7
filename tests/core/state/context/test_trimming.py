from __future__ import annotations

import pytest

from tenxgraph._sync import run_sync
from tenxgraph.core.state import (
    BaseContextManager,
    MessageContextManager,
    TextBlock,
    ToolCallBlock,
    is_paired,
)

from .convo import assistant, calls, ids, results, roles, state_of, system, tool_turn, user


def test_keeps_the_last_n_user_turns_with_their_tool_traffic() -> None:
    turns = [tool_turn(n) for n in range(5)]
    state = state_of([m for turn in turns for m in turn])
    MessageContextManager(max_messages=2).trim_context(state)
    assert ids(state.context) == ids(turns[3] + turns[4])
    assert is_paired(state.context)


def test_counts_user_messages_not_messages() -> None:
    # one turn = user + assistant + 3 tool calls + 3 results + answer: still one turn
    long_turn = [user("plan"), calls("a", "b", "c"), results("a"), results("b"), results("c")]
    long_turn.append(assistant("done"))
    history = [user("old"), assistant("old answer"), *long_turn]
    state = state_of(history)
    MessageContextManager(max_messages=1).trim_context(state)
    assert ids(state.context) == ids(long_turn)


def test_system_messages_are_kept_wherever_they_are() -> None:
    first, middle, late = system("first"), system("middle"), system("late")
    history = [first, *tool_turn(0), middle, *tool_turn(1), *tool_turn(2), late, *tool_turn(3)]
    state = state_of(history)
    MessageContextManager(max_messages=1).trim_context(state)
    assert ids(state.context) == ids([first, middle, late, *history[-4:]])
    # a system message inside the kept turns stays in place
    state = state_of(history)
    MessageContextManager(max_messages=2).trim_context(state)
    assert ids(state.context) == ids([first, middle, *history[-9:]])
    assert state.context[-5] is late


def test_within_the_limit_the_context_is_left_as_is() -> None:
    state = state_of([system(), *tool_turn(0), *tool_turn(1)])
    before = state.context
    MessageContextManager(max_messages=2).trim_context(state)
    assert state.context is before


def test_trimming_replaces_the_list_and_never_edits_messages() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]
    state = state_of(history)
    original = state.context
    dumps = [m.model_dump() for m in original]
    MessageContextManager(max_messages=1, remove_tool_msgs=True).trim_context(state)
    assert state.context is not original
    assert ids(original) == ids(history)
    assert [m.model_dump() for m in original] == dumps


def test_leading_messages_before_the_first_user_message_go_when_trimming() -> None:
    greeting = assistant("Hello! How can I help?")
    state = state_of([greeting, *tool_turn(0), *tool_turn(1)])
    MessageContextManager(max_messages=1).trim_context(state)
    assert roles(state.context)[0] == "user"
    assert greeting.message_id not in ids(state.context)


def test_remove_tool_msgs_strips_whole_groups_but_not_the_current_turn() -> None:
    chain = [  # multi-step chain, then parallel calls with text
        user("book a trip"),
        calls("s1"),
        results("s1"),
        calls("s2", "s3", text="checking two options"),
        results("s3", "s2"),
        assistant("booked"),
    ]
    current = [user("and a hotel?"), calls("h1", "h2"), results("h1"), results("h2")]
    state = state_of([system(), *chain, *current])
    MessageContextManager(max_messages=5, remove_tool_msgs=True).trim_context(state)
    assert roles(state.context) == ["system", "user", "assistant", "assistant", *roles(current)]
    kept_text = state.context[2]
    assert kept_text.message_id == chain[3].message_id
    assert kept_text.content == [TextBlock(text="checking two options")]
    assert state.context[-4:] == current  # the model still needs these results
    assert is_paired(state.context)
    assert chain[3].tool_calls()  # the original message is untouched


def test_remove_tool_msgs_applies_with_a_pending_call_at_the_end() -> None:
    pending = [user("now"), calls("p1")]  # run paused between the model and its tool
    state = state_of([*tool_turn(0), *pending])
    MessageContextManager(max_messages=3, remove_tool_msgs=True).trim_context(state)
    assert ids(state.context) == ids([state.context[0], state.context[1], *pending])
    assert roles(state.context) == ["user", "assistant", "user", "assistant"]
    assert is_paired(state.context, allow_pending_tail=True)
    assert not any(isinstance(b, ToolCallBlock) for b in state.context[1].content)


def test_keep_first_keeps_the_opening_message_and_its_results() -> None:
    opening = [calls("boot"), results("boot")]  # the conversation opens with a tool group
    history = [system(), *opening, *tool_turn(0), *tool_turn(1), *tool_turn(2)]
    state = state_of(history)
    MessageContextManager(max_messages=1, keep_first=True).trim_context(state)
    assert ids(state.context) == ids([history[0], *opening, *history[-4:]])
    assert is_paired(state.context)

    task = user("the task")
    state = state_of([task, *tool_turn(0), *tool_turn(1)])
    MessageContextManager(max_messages=1, keep_first=True).trim_context(state)
    assert state.context[0] is task and len(state.context) == 5


def test_trimmed_state_keeps_merging_new_messages() -> None:
    history = [m for n in range(3) for m in tool_turn(n)]
    state = state_of(history)
    MessageContextManager(max_messages=1).trim_context(state)
    latest = state.context[-1]
    added = state.append_messages([latest, user("next")])  # the duplicate is skipped
    assert roles(added) == ["user"]
    assert state.message_index().system_positions == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_bad_max_messages_is_refused_clearly(bad: object) -> None:
    with pytest.raises(ValueError, match=r"MessageContextManager: max_messages must be"):
        MessageContextManager(max_messages=bad)  # type: ignore[arg-type]


async def test_async_and_sync_entry_points_agree() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]
    manager = MessageContextManager(max_messages=2)
    assert isinstance(manager, BaseContextManager)
    via_async = await manager.atrim_context(state_of(history))
    via_sync = manager.trim_context(state_of(history))  # from inside a running loop too
    assert ids(via_async.context) == ids(via_sync.context) == ids(history[8:])


def test_the_001_preserving_facts_example_runs_as_written() -> None:
    from tenxgraph.core.state import AgentState

    class CustomState(AgentState):
        user_profile: str  # Static facts about the user
        decisions_made: list[str]  # Extracted decisions

    context_manager = MessageContextManager(max_messages=10)

    async def extract_decision(state: CustomState) -> CustomState:
        # After the model's response, extract and store the decision
        last_msg = state.context[-1]
        if "decided" in last_msg.text():
            state.decisions_made.append(last_msg.text())
        return state

    state = CustomState(user_profile="lives in Oslo", decisions_made=[])
    for n in range(12):
        state.append_messages([user(f"q{n}"), assistant(f"I decided on option {n}")])
        run_sync(extract_decision(state))
        context_manager.trim_context(state)
    assert sum(m.role == "user" for m in state.context) == 10
    assert len(state.decisions_made) == 12 and state.user_profile == "lives in Oslo"
