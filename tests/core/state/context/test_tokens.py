from __future__ import annotations

import pytest

from tenxgraph.core.state import (
    CharEstimateCounter,
    ImageBlock,
    MediaRef,
    Message,
    TextBlock,
    TokenBudgetContextManager,
    TokenCounter,
    is_paired,
)
from tenxgraph.core.state.context.tokens import MEDIA_TOKENS, MESSAGE_OVERHEAD_TOKENS

from .convo import assistant, calls, ids, results, roles, state_of, system, tool_turn, user


def test_char_estimate_is_four_characters_a_token_plus_framing() -> None:
    counter = CharEstimateCounter()
    assert isinstance(counter, TokenCounter)
    assert counter.count_text("abcdefgh") == 2
    assert counter.count_text("abcdefghi") == 3  # rounded up
    assert counter.count([user("a" * 40)]) == 10 + MESSAGE_OVERHEAD_TOKENS
    assert counter.count([]) == 0


def test_char_estimate_counts_tool_arguments_outputs_and_media() -> None:
    counter = CharEstimateCounter()
    call = calls("c1", name="search")  # "search" + '{"query": "c1"}'
    assert counter.count([call]) == -(-(len("search") + len('{"query": "c1"}')) // 4) + 4
    result = results("c1", output="x" * 400)
    assert counter.count([result]) == 100 + MESSAGE_OVERHEAD_TOKENS
    image = Message.multimodal_message(
        [TextBlock(text="what is this?"), ImageBlock(media=MediaRef(kind="url", url="u"))]
    )
    assert counter.count([image]) == 4 + MEDIA_TOKENS + MESSAGE_OVERHEAD_TOKENS


def test_char_estimate_is_additive() -> None:
    counter = CharEstimateCounter()
    history = [system(), *tool_turn(0), *tool_turn(1)]
    assert counter.count(history) == sum(counter.count([m]) for m in history)


def test_token_budget_keeps_the_recent_turns_that_fit() -> None:
    turns = [[user("q" * 40), assistant("a" * 40)] for _ in range(5)]  # 28 tokens a turn
    state = state_of([m for turn in turns for m in turn])
    TokenBudgetContextManager(max_tokens=60).trim_context(state)
    assert ids(state.context) == ids(turns[3] + turns[4])
    assert CharEstimateCounter().count(state.context) <= 60


def test_system_messages_count_against_the_budget_and_are_kept() -> None:
    rules = system("r" * 40)  # 14 tokens
    turns = [[user("q" * 40), assistant("a" * 40)] for _ in range(5)]
    state = state_of([rules, *[m for turn in turns for m in turn]])
    TokenBudgetContextManager(max_tokens=60).trim_context(state)
    assert ids(state.context) == ids([rules, *turns[4]])


def test_a_long_current_turn_is_cut_at_exchange_boundaries() -> None:
    turn = [user("go"), calls("a", "b"), results("a", output="x" * 200), results("b")]
    turn.append(assistant("done"))
    state = state_of([*tool_turn(0), *turn])
    # the current turn alone is over the budget: the question and the answer stay
    TokenBudgetContextManager(max_tokens=40).trim_context(state)
    assert ids(state.context) == ids([turn[0], turn[-1]])
    assert roles(state.context)[0] == "user" and is_paired(state.context)
    state = state_of([*tool_turn(0), *turn])
    TokenBudgetContextManager(max_tokens=90).trim_context(state)
    assert ids(state.context) == ids(turn)  # the call with both its results fits


def test_everything_fits_means_no_change() -> None:
    state = state_of([assistant("hello"), *tool_turn(0)])
    before = state.context
    TokenBudgetContextManager(max_tokens=10_000).trim_context(state)
    assert state.context is before


def test_the_last_exchange_stays_even_over_budget_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = [assistant("x" * 400), assistant("y" * 400)]
    state = state_of(history)
    TokenBudgetContextManager(max_tokens=10).trim_context(state)
    assert ids(state.context) == ids(history[1:])
    assert "irreducible part of the context" in caplog.text and "104 tokens" in caplog.text


def test_a_custom_counter_is_used() -> None:
    class OnePerMessage:
        def count(self, messages: object) -> int:
            return len(messages)  # type: ignore[arg-type]

    history = [m for n in range(3) for m in tool_turn(n)]
    state = state_of(history)
    TokenBudgetContextManager(max_tokens=9, token_counter=OnePerMessage()).trim_context(state)
    assert ids(state.context) == ids(history[4:])


def test_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="TokenBudgetContextManager: max_tokens"):
        TokenBudgetContextManager(max_tokens=0)
    with pytest.raises(ValueError, match="chars_per_token"):
        CharEstimateCounter(0)
