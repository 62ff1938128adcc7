"""Property tests for single long agentic turns (issue 18): one question answered through
1-200 tool exchanges, after a few earlier turns, with orphan tool results mixed in.

For every manager: the output is well paired, holds no orphan result, keeps the system
messages, the question and the last exchange, and respects the manager's budget whenever
the irreducible part (system messages, question, last exchange) fits it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import (
    AgentState,
    BaseContextManager,
    CharEstimateCounter,
    Message,
    MessageContextManager,
    SlidingWindowContextManager,
    SummaryContextManager,
    TokenBudgetContextManager,
    is_paired,
    pairing_violations,
)
from tenxgraph.core.state.context.fit import last_group_start

from .convo import assistant, calls, results, state_of, system, user

COUNTER = CharEstimateCounter()


@st.composite
def long_turns(draw: st.DrawFn) -> list[Message]:
    """Earlier turns, then one question answered through 1-200 tool exchanges."""
    ids = itertools.count()
    messages: list[Message] = [system("rules")] if draw(st.booleans()) else []
    for n in range(draw(st.integers(0, 3))):
        messages += [user(f"earlier {n}"), calls(f"e{n}"), results(f"e{n}"), assistant("done")]
    messages.append(user("q" * draw(st.integers(1, 200))))
    sizes = draw(st.lists(st.integers(0, 600), min_size=1, max_size=5))
    grouped = draw(st.booleans())
    for n in range(draw(st.integers(1, 200))):
        call_ids = [f"c{next(ids)}" for _ in range(1 + n % draw(st.sampled_from([1, 2, 3])))]
        messages.append(calls(*call_ids, text="let me look" if n % 7 == 3 else None))
        output = "r" * sizes[n % len(sizes)]
        if grouped:
            messages.append(results(*call_ids, output=output))
        else:
            messages.extend(results(i, output=output) for i in reversed(call_ids))
        if n % 11 == 5:
            messages.append(assistant("progress note"))
        if n % 13 == 7:
            messages.append(system("a reminder"))
    for _ in range(draw(st.integers(0, 2))):  # orphan results, placed anywhere but the end
        messages.insert(draw(st.integers(1, len(messages) - 1)), results("nobody-called-me"))
    ending = draw(st.sampled_from(["answer", "results", "pending"]))
    if ending == "answer":
        messages.append(assistant("final answer"))
    elif ending == "pending":
        messages.append(calls("pending"))
    return messages


@dataclass(frozen=True)
class Case:
    make: Callable[[int], BaseContextManager]
    messages: Callable[[int], int | None] = lambda size: None
    tokens: Callable[[int], int | None] = lambda size: None


def fake_summarizer(request: ModelRequest) -> str:
    return "summary"


CASES: dict[str, Case] = {
    "trim_tokens": Case(
        lambda n: MessageContextManager(max_messages=3, max_tokens=n * 40),
        tokens=lambda n: n * 40,
    ),
    "trim_tokens_no_tools": Case(
        lambda n: MessageContextManager(max_messages=2, remove_tool_msgs=True, max_tokens=n * 40),
        tokens=lambda n: n * 40,
    ),
    "trim_fraction": Case(
        lambda n: MessageContextManager(max_tokens=0.5, context_window=n * 80),
        tokens=lambda n: n * 40,
    ),
    "window": Case(lambda n: SlidingWindowContextManager(window_size=n), messages=lambda n: n),
    "window_or_tokens": Case(
        lambda n: SlidingWindowContextManager(window_size=n, max_tokens=n * 30),
        messages=lambda n: n,
        tokens=lambda n: n * 30,
    ),
    "budget": Case(lambda n: TokenBudgetContextManager(max_tokens=n * 40), tokens=lambda n: n * 40),
    "budget_fraction": Case(
        lambda n: TokenBudgetContextManager(max_tokens=0.25, context_window=n * 160),
        tokens=lambda n: n * 40,
    ),
    "summary": Case(
        lambda n: SummaryContextManager(
            FunctionModel(fake_summarizer), max_messages=n, keep_recent=n // 2
        )
    ),
}


def irreducible(before: list[Message]) -> tuple[int, int]:
    """Non-system messages and tokens of the system messages, question and last exchange."""
    last = last_group_start(before)
    users = [i for i, m in enumerate(before) if m.role == "user"]
    part = [m for m in before if m.role == "system"]
    if users and users[-1] < last:
        part.append(before[users[-1]])
    part += [m for m in before[max(last, 0) :] if m.role != "system"]
    return sum(m.role != "system" for m in part), COUNTER.count(part)


def check(before: list[Message], after: list[Message], case: Case, size: int) -> None:
    pending = bool(before[-1].tool_calls()) and before[-1].tool_calls()[0].id == "pending"
    assert is_paired(after, allow_pending_tail=pending), pairing_violations(
        after, allow_pending_tail=pending
    )
    kept = {id(m) for m in after}
    for message in before:
        if message.role == "system":
            assert id(message) in kept
    question = max(i for i, m in enumerate(before) if m.role == "user")
    assert id(before[question]) in kept
    last = last_group_start(before)
    for message in before[last:]:  # the last exchange, but for orphans placed in it
        orphan = any(r.call_id == "nobody-called-me" for r in message.tool_results())
        assert id(message) in kept or message.role == "tool"
        if message.role == "tool" and not orphan:
            assert any(m.message_id == message.message_id for m in after)
    need_messages, need_tokens = irreducible(before)
    max_messages, max_tokens = case.messages(size), case.tokens(size)
    fits = (max_messages is None or need_messages <= max_messages) and (
        max_tokens is None or need_tokens <= max_tokens
    )
    if fits:
        if max_messages is not None:
            assert sum(m.role != "system" for m in after) <= max_messages
        if max_tokens is not None:
            assert COUNTER.count(after) <= max_tokens


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=long_turns(), name=st.sampled_from(sorted(CASES)), size=st.integers(2, 60))
def test_every_manager_cuts_long_turns_within_its_budget(
    conversation: list[Message], name: str, size: int
) -> None:
    state = state_of(conversation)
    before = list(state.context)
    CASES[name].make(size).trim_context(state)
    check(before, state.context, CASES[name], size)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=long_turns())
def test_repeated_overflow_reduction_ends_at_the_irreducible_part(
    conversation: list[Message],
) -> None:
    state = state_of(conversation)
    manager = MessageContextManager(max_messages=10)
    for _ in range(40):
        if not manager.reduce_context(state):
            break
        assert is_paired(state.context, allow_pending_tail=True)
    else:
        raise AssertionError("the reductions never ended")
    rest = [m for m in state.context if m.role != "system"]
    assert rest[0].role == "user" and rest[0] is max(
        (m for m in conversation if m.role == "user"), key=conversation.index
    )
    assert len(rest) <= 2 + sum(m.role == "tool" for m in rest)  # question + last exchange


def test_an_overflow_reduction_drops_what_comes_before_the_only_question() -> None:
    history = [system("be brief"), results("ghost"), user("q"), calls("a"), results("a")]
    state = state_of(history)
    assert MessageContextManager(max_messages=10).reduce_context(state)
    assert [m.message_id for m in state.context] == [
        history[0].message_id,
        *[m.message_id for m in history[2:]],
    ]
    assert not MessageContextManager(max_messages=10).reduce_context(state)  # the irreducible part


def test_an_orphan_result_never_survives() -> None:
    history = [user("q"), results("ghost"), calls("a"), results("a"), assistant("ok")]
    for manager in (
        MessageContextManager(),
        SlidingWindowContextManager(),
        TokenBudgetContextManager(max_tokens=10_000),
    ):
        state = state_of(history)
        manager.trim_context(state)
        assert [m.message_id for m in state.context] == [
            history[0].message_id,
            *[m.message_id for m in history[2:]],
        ]


def test_the_state_reports_nothing_when_it_fits() -> None:
    state = AgentState()
    state.append_messages([user("q"), assistant("a")])
    before = state.context
    TokenBudgetContextManager(max_tokens=1_000).trim_context(state)
    assert state.context is before
