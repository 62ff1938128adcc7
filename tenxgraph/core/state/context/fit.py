"""Fit a context into a budget, cutting inside the current turn when it must.

Every manager but the summarizer keeps the system messages and a suffix of
the conversation. ``fit_context`` picks that suffix by walking back from the
end, so its cost is the size of what is kept, never of the history:

- before the current question, cuts fall only at user messages (a turn is
  kept whole or not at all);
- inside the current turn (after the last user message), cuts fall at tool
  group starts, so a call and its results stay together, and the question
  is kept in front of what remains;
- the *irreducible part* (system messages, the question and the last
  exchange, i.e. the last group) is always kept. When it alone is over the
  budget, ``Fit.over_budget`` says so and the manager logs a warning.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from tenxgraph.core.state.context.tokens import TokenCounter
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, ToolCallBlock, ToolResultBlock

__all__ = [
    "Fit",
    "drop_orphan_results",
    "fit_context",
    "kept_after_summary",
    "last_group_start",
    "split_for_summary",
    "warn_over_budget",
]

logger = logging.getLogger("tenxgraph.context")


@dataclass(frozen=True, slots=True)
class Fit:
    """Where a context is cut, and how large its irreducible part is."""

    start: int
    """The kept suffix begins here (the question is kept as well when it lies before)."""
    question: int | None
    """Index of the last user message, or None when there is none."""
    irreducible_messages: int
    """Non-system messages of the irreducible part (question and last exchange)."""
    irreducible_tokens: int | None
    """Tokens of the irreducible part, system messages included (None: tokens not counted)."""
    over_budget: bool
    """True when the irreducible part alone is over the budget (it is kept anyway)."""

    def kept(self, context: Sequence[Message], systems: Sequence[int]) -> list[Message]:
        """The kept messages: earlier system messages, the question, then the suffix."""
        start, question = self.start, self.question
        before = systems[: bisect_left(systems, start)]
        if question is None or question >= start:
            return [context[p] for p in before] + list(context[start:])
        head = sorted({*before, question})
        return [context[p] for p in head] + list(context[start:])


def last_group_start(context: Sequence[Message]) -> int:
    """Index of the last message that is neither a tool result nor a system message (or -1).

    From there to the end is the *last exchange*: an assistant message with
    its tool results, an answer, or the question itself.
    """
    index = len(context) - 1
    while index >= 0 and context[index].role in ("tool", "system"):
        index -= 1
    return index


def fit_context(
    context: Sequence[Message],
    systems: Sequence[int],
    users: Sequence[int],
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    counter: TokenCounter | None = None,
    floor: int = 0,
) -> Fit:
    """The longest suffix (from ``floor`` on) within both budgets, cut as the module says.

    ``systems`` and ``users`` are the ascending positions of the system and
    user messages (``AgentState.message_index()`` keeps them). ``max_messages``
    counts non-system messages; ``max_tokens`` counts with ``counter`` and
    includes the system messages. A None budget is no limit.
    """
    question = users[-1] if users else None
    last = last_group_start(context)
    if last < floor:
        return Fit(floor, question, 0, None, False)
    count = counter.count if max_tokens is not None and counter is not None else None
    fixed = count([context[p] for p in systems]) if count else 0
    asked = count([context[question]]) if count and question is not None else 0

    def fits(messages: int, tokens: int) -> bool:
        if max_messages is not None and messages > max_messages:
            return False
        return max_tokens is None or fixed + tokens <= max_tokens

    used_messages = used_tokens = 0
    start = last
    irreducible = (0, 0)  # pragma: no mutate (always set: the walk reaches last >= floor)
    for index in range(len(context) - 1, floor - 1, -1):
        message = context[index]
        if message.role == "system":
            continue
        used_messages += 1
        used_tokens += count([message]) if count else 0
        # ">" here, ">=" would do as well: at the question itself both tests below hold, and
        # the question is kept in front whether or not the walk stops there (hence the pragmas).
        inside = question is None or index > question  # pragma: no mutate
        total = (used_messages, used_tokens)
        if question is not None and index > question:  # pragma: no mutate
            total = (used_messages + 1, used_tokens + asked)
        if index >= last:  # the last exchange is kept in any case
            if index == last:
                irreducible = total
            continue
        if not fits(*total):
            break
        if (message.role != "tool") if inside else (message.role == "user"):
            start = index
    else:
        if fits(used_messages, used_tokens):
            start = floor
    return Fit(
        start,
        question,
        irreducible[0],
        fixed + irreducible[1] if count else None,
        not fits(*irreducible),
    )


def warn_over_budget(
    owner: str, fit: Fit, max_messages: int | None, max_tokens: int | None
) -> None:
    """Log that ``owner`` kept its irreducible part although it is over the budget."""
    if not fit.over_budget:
        return
    size = f"{fit.irreducible_messages} messages"
    if fit.irreducible_tokens is not None:
        size += f", {fit.irreducible_tokens} tokens"
    limits = ", ".join(
        f"{name}={value}"
        for name, value in (("max_messages", max_messages), ("max_tokens", max_tokens))
        if value is not None
    )
    logger.warning(
        "%s: the irreducible part of the context (system messages, the question and the "
        "last exchange: %s) is over its budget (%s); it is kept whole, and overflow "
        "recovery shortens it if the model refuses it",
        owner,
        size,
        limits,
    )


def drop_orphan_results(messages: list[Message]) -> list[Message]:
    """``messages`` without tool results that answer no call of their group.

    A result answers a call of the nearest message before it that is not a
    tool message, once. Tool messages left without a result go; the list is
    returned as is (the same object) when there is no orphan.
    """
    anchor: Message | None = None  # the message the next tool results answer
    pending: set[str] | None = None  # pragma: no mutate (a leading tool message: "" is as empty)
    for message in messages:
        if message.role != "tool":
            anchor, pending = message, None
            continue
        if pending is None:  # the calls are read only where results follow them
            pending = _call_ids(anchor)
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                if block.call_id not in pending:
                    return _without_orphans(messages)
                pending.discard(block.call_id)
    return messages


def _call_ids(message: Message | None) -> set[str]:
    if message is None or message.role != "assistant":
        return set()
    return {block.id for block in message.content if isinstance(block, ToolCallBlock)}


def _without_orphans(messages: list[Message]) -> list[Message]:
    kept: list[Message] = []
    pending: set[str] = set()
    for message in messages:
        if message.role != "tool":
            pending = _call_ids(message)
            kept.append(message)
            continue
        content: list[ContentBlock] = []
        for block in message.content:
            if not isinstance(block, ToolResultBlock):
                content.append(block)
            elif block.call_id in pending:
                pending.discard(block.call_id)
                content.append(block)
        if len(content) == len(message.content):
            kept.append(message)
        elif any(isinstance(block, ToolResultBlock) for block in content):
            kept.append(message.model_copy(update={"content": content}))
    return kept


def split_for_summary(context: list[Message], keep_recent: int) -> tuple[list[Message], int]:
    """The messages to summarize and where the verbatim part starts, for the summarizer.

    At least ``keep_recent`` non-system messages stay verbatim, the cut
    moved earlier to a tool group start (never inside the last exchange).
    The cut may fall inside the current turn: its question then stays in
    front of the verbatim part and is not summarized. Returns ``(old,
    cut)``; ``old`` is empty when there is nothing to summarize. Build the
    kept list with ``kept_after_summary``.
    """
    seen = 0
    cut = 0  # pragma: no mutate (never read: the loop sets it before any break)
    for index in range(len(context) - 1, -1, -1):
        if context[index].role != "system":
            seen += 1
            cut = index
            if seen >= keep_recent:
                break  # with keep_recent=0 this still keeps the last message's group
    else:
        return [], 0  # fewer than keep_recent: nothing to summarize
    while cut > 0 and context[cut].role == "tool":
        cut -= 1
    cut = min(cut, max(last_group_start(context), 0))
    question = _question_before(context, cut)
    old = [m for i, m in enumerate(context[:cut]) if m.role != "system" and i != question]
    return old, cut


def kept_after_summary(context: list[Message], cut: int) -> list[Message]:
    """System messages before ``cut``, the current question if it lies before, then the rest."""
    question = _question_before(context, cut)
    head = [m for i, m in enumerate(context[:cut]) if m.role == "system" or i == question]
    return drop_orphan_results(head + context[cut:])


def _question_before(context: list[Message], cut: int) -> int | None:
    """Index of the last user message when it lies before ``cut`` (a cut inside its turn).

    Both callers read it only below ``cut``, so the test against ``cut`` cannot change
    what they return (hence the pragmas), nor can a walk one step further (to ``-1``).
    """
    for index in range(len(context) - 1, -1, -1):  # pragma: no mutate
        if context[index].role == "user":
            return index if index < cut else None  # pragma: no mutate
    return None
