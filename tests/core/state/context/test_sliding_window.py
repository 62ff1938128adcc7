from __future__ import annotations

import pytest

from tenxgraph.core.state import SlidingWindowContextManager, is_paired

from .convo import assistant, calls, ids, results, roles, state_of, system, tool_turn, user


def test_keeps_at_most_the_window_starting_on_a_user_message() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]  # 16 messages
    state = state_of(history)
    SlidingWindowContextManager(window_size=6).trim_context(state)
    # the last 6 start on a tool result; the window moves to the next user message
    assert ids(state.context) == ids(history[12:])
    assert roles(state.context)[0] == "user"


def test_never_starts_on_an_assistant_message() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]
    state = state_of(history)
    SlidingWindowContextManager(window_size=5).trim_context(state)  # would start on "answer 2"
    assert ids(state.context) == ids(history[12:])


def test_exactly_a_turn_boundary_keeps_the_full_window() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]
    state = state_of(history)
    SlidingWindowContextManager(window_size=8).trim_context(state)
    assert ids(state.context) == ids(history[8:])


def test_system_messages_are_kept_and_not_counted() -> None:
    rules, note = system("rules"), system("note")
    history = [rules, *tool_turn(0), note, *tool_turn(1), *tool_turn(2)]
    state = state_of(history)
    SlidingWindowContextManager(window_size=4).trim_context(state)
    assert ids(state.context) == ids([rules, note, *history[-4:]])


def test_a_turn_longer_than_the_window_keeps_its_question_and_latest_exchanges() -> None:
    current = [user("dig"), *[m for i in range(4) for m in (calls(f"d{i}"), results(f"d{i}"))]]
    state = state_of([*tool_turn(0), *current])
    SlidingWindowContextManager(window_size=3).trim_context(state)
    assert ids(state.context) == ids([current[0], *current[-2:]])
    assert is_paired(state.context)
    state = state_of([*tool_turn(0), *current])
    SlidingWindowContextManager(window_size=6).trim_context(state)
    assert ids(state.context) == ids([current[0], *current[-4:]])  # an odd slot stays empty


def test_fitting_history_is_left_alone() -> None:
    state = state_of([assistant("hi"), *tool_turn(0)])
    before = state.context
    SlidingWindowContextManager(window_size=5).trim_context(state)
    assert state.context is before


def test_without_user_messages_the_window_starts_at_a_group_start() -> None:
    history = [assistant("a"), calls("x", "y"), results("x"), results("y"), assistant("b")]
    state = state_of(history)
    SlidingWindowContextManager(window_size=3).trim_context(state)
    assert ids(state.context) == ids(history[-1:])  # the calls' group is 3 with "b": too many
    state = state_of(history)
    SlidingWindowContextManager(window_size=4).trim_context(state)
    assert ids(state.context) == ids(history[1:])
    assert is_paired(state.context)


async def test_overflow_halves_the_window() -> None:
    history = [m for n in range(4) for m in tool_turn(n)]
    state = state_of(history)
    manager = SlidingWindowContextManager(window_size=100)
    assert await manager.areduce_context(state)
    assert ids(state.context) == ids(history[8:])
    assert await manager.areduce_context(state)
    assert ids(state.context) == ids(history[12:])


def test_bad_window_is_refused() -> None:
    with pytest.raises(ValueError, match="SlidingWindowContextManager: window_size"):
        SlidingWindowContextManager(window_size=0)
