"""``TokenBudgetContextManager``: keep the most recent messages that fit a token budget."""

from __future__ import annotations

from tenxgraph.core.state.context.base import LocalContextManager, S, check_budget, check_window
from tenxgraph.core.state.context.cuts import replace_context
from tenxgraph.core.state.context.fit import drop_orphan_results, fit_context, warn_over_budget
from tenxgraph.core.state.context.tokens import TokenCounter, as_token_counter
from tenxgraph.errors import ConfigError

__all__ = ["TokenBudgetContextManager"]


class TokenBudgetContextManager(LocalContextManager):
    """Keep the most recent messages whose tokens, with the system messages', fit ``max_tokens``.

    Older turns go whole (a user message starts a turn). When the current
    turn alone is over the budget it is cut at tool-exchange boundaries: its
    question and its last exchange stay, with as many of the exchanges just
    before as fit, so a tool call never loses its result. Only when the
    system messages, the question and the last exchange alone are over the
    budget is more kept than the budget, and a warning says so. Tool
    results that answer no call never survive.

    Args:
        max_tokens: The budget for the whole context: a token count, or a
            fraction of the model's context window (a float in (0, 1]).
        token_counter: How tokens are counted: an object with a
            ``count(messages)`` method. The ~4 characters per token estimate
            by default, ``TiktokenCounter`` for exact OpenAI counts; anything
            else raises ``ConfigError`` here.
        context_window: The window a fraction refers to (default: the model's).
        proactive_at: Reduce a request before sending it when its estimate
            passes this fraction of the window (None: wait for the error).
    """

    def __init__(
        self,
        max_tokens: float,
        token_counter: TokenCounter | None = None,
        *,
        context_window: int | None = None,
        proactive_at: float | None = None,
    ) -> None:
        owner = "TokenBudgetContextManager"
        if max_tokens is None:
            raise ConfigError(f"{owner}: max_tokens is required")
        check_budget(owner, "max_tokens", max_tokens)
        check_window(owner, context_window, proactive_at)
        self.max_tokens = max_tokens
        self.token_counter = as_token_counter(owner, token_counter)
        self.context_window = context_window
        self.proactive_at = proactive_at

    def bound(self, state: S) -> S:
        """Drop the oldest messages until the context fits ``max_tokens``."""
        tokens = self.tokens_for("max_tokens", self.max_tokens)
        if tokens is None:
            return state
        context = state.context
        index = state.message_index()
        fit = fit_context(
            context,
            index.system_positions,
            index.user_positions,
            max_tokens=tokens,
            counter=self.token_counter,
        )
        warn_over_budget("TokenBudgetContextManager", fit, None, tokens)
        replace_context(state, drop_orphan_results(fit.kept(context, index.system_positions)))
        return state

    def __repr__(self) -> str:
        return (
            f"TokenBudgetContextManager(max_tokens={self.max_tokens}, "
            f"token_counter={self.token_counter!r})"
        )
