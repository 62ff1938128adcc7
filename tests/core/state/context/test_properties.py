"""Property tests: every manager keeps every invariant on random well-paired conversations."""

from __future__ import annotations

import itertools
from collections.abc import Callable

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
)
from tenxgraph.core.state.context.cuts import last_user_index

from .convo import assistant, calls, results, state_of, system, user

SEGMENTS = ["user", "user", "assistant", "system", "tools", "tools", "chain"]


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Well-paired conversations: tool chains, parallel calls with results in any order and
    split or grouped, system messages anywhere, empty turns and assistant-only stretches."""
    ids = itertools.count()
    messages: list[Message] = []
    for kind in draw(st.lists(st.sampled_from(SEGMENTS), max_size=30)):
        if kind == "user":
            messages.append(user("u" * draw(st.integers(0, 80))))
        elif kind == "assistant":
            messages.append(assistant("a" * draw(st.integers(0, 80))))
        elif kind == "system":
            messages.append(system())
        else:
            for _ in range(draw(st.integers(2, 3)) if kind == "chain" else 1):
                call_ids = [f"c{next(ids)}" for _ in range(draw(st.integers(1, 3)))]
                text = draw(st.sampled_from([None, "let me check"]))
                messages.append(calls(*call_ids, text=text))
                order = draw(st.permutations(call_ids))
                size = draw(st.integers(0, 300))
                if draw(st.booleans()):
                    messages.extend(results(i, output="r" * size) for i in order)
                else:
                    messages.append(results(*order, output="r" * size))
    if draw(st.booleans()):  # a run paused between the model's tool call and the tool
        messages.append(calls("pending"))
    return messages


def fake_summarizer(request: ModelRequest) -> str:
    return f"summary of {len(request.messages[1].text())} characters"


MANAGERS: dict[str, Callable[[int], BaseContextManager]] = {
    "trim": lambda n: MessageContextManager(max_messages=n),
    "trim_no_tools": lambda n: MessageContextManager(max_messages=n, remove_tool_msgs=True),
    "trim_keep_first": lambda n: MessageContextManager(max_messages=n, keep_first=True),
    "window": lambda n: SlidingWindowContextManager(window_size=n),
    "budget": lambda n: TokenBudgetContextManager(max_tokens=n * 25),
    "summary": lambda n: SummaryContextManager(
        FunctionModel(fake_summarizer), max_messages=n, keep_recent=n // 2
    ),
    "summary_tokens": lambda n: SummaryContextManager(
        FunctionModel(fake_summarizer),
        max_messages=None,
        token_budget=n * 25,
        keep_recent=n // 3,
        remove_tool_msgs=True,
    ),
}


def check_invariants(before: list[Message], state: AgentState) -> None:
    after = state.context
    pending = bool(before) and _pending(before[-1])
    assert is_paired(after, allow_pending_tail=pending)
    if pending:
        assert after[-1] is before[-1]  # the pending call waits for its result
    position = {m.message_id: i for i, m in enumerate(before)}
    kept = [position[m.message_id] for m in after]
    assert kept == sorted(kept) and len(set(kept)) == len(kept)  # an ordered subsequence
    for message in after:  # kept messages are the originals (or tool-stripped copies)
        original = before[position[message.message_id]]
        assert message is original or (original.tool_calls() and not message.tool_calls())
    kept_ids = set(position) & {m.message_id for m in after}
    assert {m.message_id for m in before if m.role == "system"} <= kept_ids
    last_user = last_user_index(before)
    if last_user is not None:
        assert before[last_user] in after


def _pending(message: Message) -> bool:
    return any(call.id == "pending" for call in message.tool_calls())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation=conversations(),
    name=st.sampled_from(sorted(MANAGERS)),
    size=st.integers(1, 12),
)
def test_every_manager_keeps_the_invariants(
    conversation: list[Message], name: str, size: int
) -> None:
    state = state_of(conversation)
    before = list(state.context)
    dumps = [m.model_dump() for m in before]
    MANAGERS[name](size).trim_context(state)
    check_invariants(before, state)
    assert [m.model_dump() for m in before] == dumps  # nothing edited in place


@settings(max_examples=60, deadline=None)
@given(conversation=conversations(), turns=st.integers(1, 8), keep_first=st.booleans())
def test_trimming_keeps_exactly_the_requested_user_turns(
    conversation: list[Message], turns: int, keep_first: bool
) -> None:
    state = state_of(conversation)
    MessageContextManager(max_messages=turns, keep_first=keep_first).trim_context(state)
    users_before = sum(m.role == "user" for m in conversation)
    users_after = sum(m.role == "user" for m in state.context)
    first = next((m for m in conversation if m.role != "system"), None)
    extra = int(keep_first and users_before > turns and first is not None and first.role == "user")
    assert users_after == min(turns, users_before) + extra
    check_invariants(conversation, state)
    if users_before > turns and not keep_first:  # trimmed: starts on a turn boundary
        assert next(m for m in state.context if m.role != "system").role == "user"


@settings(max_examples=60, deadline=None)
@given(conversation=conversations(), size=st.integers(1, 15))
def test_the_window_starts_on_a_user_message_and_holds_at_most_its_size(
    conversation: list[Message], size: int
) -> None:
    state = state_of(conversation)
    SlidingWindowContextManager(window_size=size).trim_context(state)
    rest = [m for m in state.context if m.role != "system"]
    dropped = len(rest) < sum(m.role != "system" for m in conversation)
    if dropped and any(m.role == "user" for m in conversation):
        assert rest[0].role == "user"
    last_user = last_user_index(rest)
    if last_user is not None and last_user > 0:  # whatever precedes the current turn fits
        assert len(rest) <= size


@settings(max_examples=60, deadline=None)
@given(conversation=conversations(), budget=st.integers(1, 400))
def test_the_budget_is_met_unless_only_the_current_turn_is_left(
    conversation: list[Message], budget: int
) -> None:
    state = state_of(conversation)
    counter = CharEstimateCounter()
    TokenBudgetContextManager(max_tokens=budget).trim_context(state)
    rest = [m for m in state.context if m.role != "system"]
    only_current_turn = [m.role for m in rest].count("user") <= 1
    if counter.count(state.context) > budget and any(m.role == "user" for m in conversation):
        assert only_current_turn and rest[0].role == "user"


@settings(max_examples=40, deadline=None)
@given(conversation=conversations(), keep=st.integers(0, 6))
def test_overflow_reduction_shrinks_or_reports_nothing_left(
    conversation: list[Message], keep: int
) -> None:
    for manager in (
        MessageContextManager(max_messages=5),
        SlidingWindowContextManager(window_size=5),
        SummaryContextManager(FunctionModel(fake_summarizer), keep_recent=keep),
    ):
        state = state_of(conversation)
        before = state.context
        reduced = manager.reduce_context(state)
        assert reduced == (state.context is not before)
        check_invariants(conversation, state)
