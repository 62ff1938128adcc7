"""``fit_context`` and the summarizer's split, held to their promises without the callers' cleanup.

Every manager passes ``fit.kept(...)`` through ``drop_orphan_results``; these
tests read ``fit.kept`` itself, so "never cut between a call and its
result" is the cut's own property, not the cleanup's. Written against the
mutants ``make mutation`` found surviving (tests/README.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from tenxgraph.core.state import Message, TextBlock
from tenxgraph.core.state.context.cuts import (
    count_user_messages,
    keep_from,
    last_user_index,
    nth_last_user_index,
    replace_context,
    snap_to_group_start,
    strip_completed_tool_groups,
)
from tenxgraph.core.state.context.fit import (
    Fit,
    drop_orphan_results,
    fit_context,
    kept_after_summary,
    last_group_start,
    split_for_summary,
    warn_over_budget,
)
from tenxgraph.core.state.pairing import is_paired
from tests.core.state.context.convo import (
    assistant,
    calls,
    results,
    roles,
    state_of,
    system,
    user,
)


class PerMessage:
    """Counts ``weight`` tokens a message (the length of its text, by default)."""

    def __init__(self, weight: int | None = None) -> None:
        self.weight = weight

    def count(self, messages: Sequence[Message]) -> int:
        if self.weight is not None:
            return self.weight * len(messages)
        return sum(len(m.text()) for m in messages)


def fit(context: list[Message], **budgets: object) -> Fit:
    systems = [i for i, m in enumerate(context) if m.role == "system"]
    users = [i for i, m in enumerate(context) if m.role == "user"]
    return fit_context(context, systems, users, **budgets)  # type: ignore[arg-type]


def kept(context: list[Message], **budgets: object) -> list[Message]:
    systems = [i for i, m in enumerate(context) if m.role == "system"]
    return fit(context, **budgets).kept(context, systems)


# --- fit_context -----------------------------------------------------------------------


def test_a_system_message_in_the_middle_neither_counts_nor_stops_the_walk() -> None:
    context = [user("q1"), assistant("a1"), system(), user("q2"), assistant("a2")]
    assert kept(context, max_messages=4) == context
    assert kept(context, max_messages=3) == [context[2], context[3], context[4]]
    assert kept(context, max_messages=2) == [context[2], context[3], context[4]]


def test_before_the_current_turn_cuts_fall_only_at_user_messages() -> None:
    context = [user("q1"), assistant("a1"), user("q2"), assistant("a2"), user("q3"), assistant()]
    assert kept(context, max_messages=3) == context[4:]  # a2 alone would open the window
    assert kept(context, max_messages=4) == context[2:]
    assert kept(context, max_messages=6) == context


def test_inside_the_current_turn_the_cut_never_separates_a_call_from_its_result() -> None:
    context = [user("q"), calls("a"), results("a"), calls("b"), results("b"), assistant("done")]
    for size in range(1, 8):
        window = kept(context, max_messages=size)
        assert is_paired(window), size  # by the cut alone, before any orphan cleanup
        assert window[0] is context[0]  # the question stays in front
    assert kept(context, max_messages=2) == [context[0], context[5]]
    assert kept(context, max_messages=3) == [context[0], context[5]]
    assert kept(context, max_messages=4) == [context[0], *context[3:]]
    assert kept(context, max_messages=5) == [context[0], *context[3:]]
    assert kept(context, max_messages=6) == context


def test_the_irreducible_part_is_kept_and_reported_when_over_budget() -> None:
    context = [system("sys"), user("q"), calls("a"), results("a")]
    over = fit(context, max_messages=1, max_tokens=100, counter=PerMessage(2))
    assert (over.start, over.question, over.over_budget) == (2, 1, True)
    assert (over.irreducible_messages, over.irreducible_tokens) == (3, 8)  # system counted
    assert over.kept(context, [0]) == context
    within = fit(context, max_messages=3)
    assert (within.over_budget, within.irreducible_messages, within.irreducible_tokens) == (
        False,
        3,
        None,
    )


def test_tokens_count_the_system_messages_and_the_question_in_front() -> None:
    context = [system("s" * 10), user("q" * 5), calls("a"), results("a"), assistant("z" * 3)]
    # system 10 + question 5 + answer 3 = 18: the tool exchange (texts "" and "ok") costs 2
    assert kept(context, max_tokens=18, counter=PerMessage()) == [
        context[0],
        context[1],
        context[4],
    ]
    assert kept(context, max_tokens=20, counter=PerMessage()) == context
    assert fit(context, max_tokens=17, counter=PerMessage()).over_budget
    assert not fit(context, max_tokens=18, counter=PerMessage()).over_budget
    # without a counter, max_tokens cannot be measured and limits nothing
    assert kept(context, max_tokens=1) == context
    assert kept(context, max_tokens=0) == context
    assert not fit(context, max_tokens=0).over_budget


def test_a_floor_is_where_the_kept_suffix_may_begin_at_most() -> None:
    context = [user("q1"), assistant("a1"), user("q2"), assistant("a2")]
    assert fit(context, floor=2).start == 2
    assert fit(context, floor=2, max_messages=1).start == 3
    assert fit([user("q"), assistant(), system()], floor=2) == Fit(2, 0, 0, None, False)
    # a floor on the last exchange: that exchange is still the irreducible part, measured
    at_last = fit(context, floor=3, max_tokens=1, counter=PerMessage(5))
    assert at_last == Fit(3, 2, 2, 10, True)


def test_no_user_message_means_everything_is_the_current_turn() -> None:
    context = [calls("a"), results("a"), calls("b"), results("b")]
    result = fit(context, max_messages=2)
    assert (result.question, result.start) == (None, 2)
    assert result.kept(context, []) == context[2:]


def test_last_group_start_skips_tool_and_system_messages() -> None:
    assert last_group_start([user(), calls("a"), results("a"), system()]) == 1
    assert last_group_start([user(), assistant()]) == 1
    assert last_group_start([system(), results("x")]) == -1
    assert last_group_start([]) == -1


def test_the_over_budget_warning_names_the_owner_sizes_and_limits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    over = Fit(2, 1, 3, 8, True)
    with caplog.at_level(logging.WARNING, logger="tenxgraph.context"):
        warn_over_budget("Window", over, 1, None)
        warn_over_budget("Window", Fit(2, 1, 3, None, True), 1, 50)
        warn_over_budget("Window", Fit(0, None, 1, 1, False), 1, 50)
    assert [r.getMessage() for r in caplog.records] == [
        "Window: the irreducible part of the context (system messages, the question and the "
        "last exchange: 3 messages, 8 tokens) is over its budget (max_messages=1); it is kept "
        "whole, and overflow recovery shortens it if the model refuses it",
        "Window: the irreducible part of the context (system messages, the question and the "
        "last exchange: 3 messages) is over its budget (max_messages=1, max_tokens=50); it is "
        "kept whole, and overflow recovery shortens it if the model refuses it",
    ]


# --- drop_orphan_results ---------------------------------------------------------------


def test_drop_orphan_results_returns_the_same_list_when_nothing_is_dropped() -> None:
    context = [user(), calls("a", "b"), results("a"), results("b"), assistant()]
    assert drop_orphan_results(context) is context


def test_a_duplicate_result_for_one_call_is_dropped() -> None:
    context = [user(), calls("a"), results("a"), results("a"), assistant()]
    cleaned = drop_orphan_results(context)
    assert cleaned == [context[0], context[1], context[2], context[4]]
    assert is_paired(cleaned)


def test_results_answer_only_the_nearest_message_before_them() -> None:
    context = [calls("a"), results("a"), user(), results("a"), assistant(), results("b")]
    assert drop_orphan_results(context) == [*context[:3], context[4]]


def test_a_mixed_tool_message_loses_only_its_orphan() -> None:
    note = TextBlock(text="both ran")
    mixed = Message.tool_message([*results("a").content, note, *results("ghost").content])
    context = [user(), calls("a"), mixed]
    cleaned = drop_orphan_results(context)
    assert [b.call_id for b in cleaned[2].tool_results()] == ["a"]
    assert cleaned[2].content[1] == note  # what is not a result stays
    assert cleaned[2].message_id == mixed.message_id
    assert len(mixed.tool_results()) == 2  # the stored message is not modified


# --- split_for_summary / kept_after_summary --------------------------------------------


def test_split_moves_the_cut_back_to_the_call_at_the_very_start() -> None:
    context = [calls("a"), results("a"), user("q"), assistant()]
    assert split_for_summary(context, 3) == ([], 0)
    assert split_for_summary(context, 2) == ([context[0], context[1]], 2)


def test_split_never_cuts_before_an_orphan_at_index_zero() -> None:
    context = [results("x"), user("q"), assistant()]
    assert split_for_summary(context, 3) == ([], 0)
    assert split_for_summary(context, 4) == ([], 0)  # fewer than keep_recent: nothing to do


def test_split_with_a_tool_result_at_index_one() -> None:
    context = [user("q1"), calls("a"), results("a"), user("q2"), assistant()]
    assert split_for_summary(context, 3) == ([context[0]], 1)
    assert split_for_summary(context, 4) == ([context[0]], 1)  # moved back onto the call


def test_split_of_tool_results_alone_summarizes_nothing() -> None:
    context = [results("x"), system(), results("y")]
    assert split_for_summary(context, 1) == ([], 0)


def test_system_messages_do_not_count_toward_keep_recent() -> None:
    context = [user("q1"), assistant("a1"), user("q2"), system(), assistant("a2")]
    old, cut = split_for_summary(context, 2)
    assert (old, cut) == ([context[0], context[1]], 2)
    assert kept_after_summary(context, cut) == context[2:]


def test_keep_recent_zero_still_keeps_the_last_exchange() -> None:
    context = [user("q1"), assistant("a1"), user("q2"), calls("a"), results("a")]
    old, cut = split_for_summary(context, 0)
    assert cut == 3 and old == [context[0], context[1]]  # q2 is the current question
    assert kept_after_summary(context, cut) == context[2:]


def test_a_cut_inside_the_current_turn_keeps_its_question_in_front() -> None:
    context = [system(), user("q"), calls("a"), results("a"), calls("b"), results("b")]
    old, cut = split_for_summary(context, 2)
    assert (old, cut) == ([context[2], context[3]], 4)
    assert kept_after_summary(context, cut) == [context[0], context[1], context[4], context[5]]


# --- cuts ---------------------------------------------------------------------------------


def test_user_message_lookups_walk_back_from_the_end() -> None:
    context = [user("q1"), assistant(), user("q2"), assistant(), user("q3")]
    assert nth_last_user_index(context, 1) == 4
    assert nth_last_user_index(context, 2) == 2
    assert nth_last_user_index(context, 3) == 0
    assert nth_last_user_index(context, 4) is None
    assert nth_last_user_index(context, 1, before=4) == 2
    assert last_user_index(context, before=2) == 0
    assert last_user_index([assistant()]) is None
    assert count_user_messages(context) == 3


def test_snap_to_group_start_moves_back_off_tool_results() -> None:
    context = [user(), calls("a"), results("a"), results("a"), assistant()]
    assert [snap_to_group_start(context, i) for i in range(5)] == [0, 1, 1, 1, 4]
    assert snap_to_group_start([results("x"), user()], 0) == 0


def test_keep_from_puts_the_earlier_system_messages_first() -> None:
    context = [system("s1"), user(), system("s2"), assistant(), system("s3")]
    assert keep_from(context, 3, [0, 2, 4]) == [context[0], context[2], context[3], context[4]]
    assert keep_from(context, 2, [0, 2, 4]) == [context[0], *context[2:]]


def test_strip_completed_tool_groups_keeps_the_current_turns_tools() -> None:
    context = [user("q1"), calls("a", text="looking"), results("a"), assistant("a1")]
    current = [user("q2"), calls("b"), results("b")]
    stripped = strip_completed_tool_groups(context + current)
    assert roles(stripped) == ["user", "assistant", "assistant", "user", "assistant", "tool"]
    assert stripped[1].text() == "looking" and not stripped[1].tool_calls()
    assert stripped[3:] == current
    assert strip_completed_tool_groups(current[1:]) == current[1:]


def test_replace_context_reports_whether_anything_changed() -> None:
    messages = [user(), assistant()]
    state = state_of(messages)
    assert replace_context(state, list(state.context)) is False
    equal_copies = [m.model_copy() for m in state.context]
    assert replace_context(state, equal_copies) is True and state.context is equal_copies
    assert replace_context(state, equal_copies[:1]) is True
    assert [m.message_id for m in state.context] == [messages[0].message_id]
