"""``TokenBudgetContextManager``: keep the most recent whole turns that fit a token budget."""

from __future__ import annotations

from tenxgraph.core.state.context.base import LocalContextManager, S, check_count
from tenxgraph.core.state.context.cuts import keep_from, replace_context
from tenxgraph.core.state.context.tokens import TokenCounter, as_token_counter
from tenxgraph.core.state.message import Message

__all__ = ["TokenBudgetContextManager"]


class TokenBudgetContextManager(LocalContextManager):
    """Keep the most recent turns whose tokens, with the system messages', fit ``max_tokens``.

    Cuts fall only at turn boundaries (a user message starts a turn), so a
    tool call never loses its result and the context starts on a user
    message. The current turn is always kept, even when it alone is over
    the budget (overflow recovery handles that case). Without any user
    message nothing is cut.

    Args:
        max_tokens: The budget for the whole context (at least 1).
        token_counter: How tokens are counted: an object with a
            ``count(messages)`` method. The ~4 characters per token estimate
            by default, ``TiktokenCounter`` for exact OpenAI counts; anything
            else raises ``ConfigError`` here.
    """

    def __init__(self, max_tokens: int, token_counter: TokenCounter | None = None) -> None:
        check_count("TokenBudgetContextManager", "max_tokens", max_tokens)
        self.max_tokens = max_tokens
        self.token_counter = as_token_counter("TokenBudgetContextManager", token_counter)

    def bound(self, state: S) -> S:
        """Drop the oldest turns until the context fits ``max_tokens``."""
        context = state.context
        systems = state.message_index().system_positions
        start = _budget_start(context, self.max_tokens, systems, self.token_counter)
        if start is not None:
            replace_context(state, keep_from(context, start, systems))
        return state

    def __repr__(self) -> str:
        return (
            f"TokenBudgetContextManager(max_tokens={self.max_tokens}, "
            f"token_counter={self.token_counter!r})"
        )


def _budget_start(
    context: list[Message], max_tokens: int, systems: list[int], counter: TokenCounter
) -> int | None:
    """The user message the kept turns start at, or None when everything fits."""
    budget = max_tokens - counter.count([context[p] for p in systems])
    used = 0
    start: int | None = None
    for index in range(len(context) - 1, -1, -1):
        message = context[index]
        if message.role == "system":
            continue
        used += counter.count([message])
        if used > budget and start is not None:
            return start
        if message.role == "user":
            if used > budget:
                return index  # the current turn is kept even over budget
            start = index
    return None
