"""``SlidingWindowContextManager``: keep at most the last N messages, starting on a user turn."""

from __future__ import annotations

from tenxgraph.core.state.context.base import (
    LocalContextManager,
    S,
    check_budget,
    check_count,
    check_window,
)
from tenxgraph.core.state.context.cuts import replace_context
from tenxgraph.core.state.context.fit import drop_orphan_results, fit_context, warn_over_budget
from tenxgraph.core.state.context.tokens import TokenCounter, as_token_counter

__all__ = ["SlidingWindowContextManager"]


class SlidingWindowContextManager(LocalContextManager):
    """A window over the most recent ``window_size`` non-system messages (and ``max_tokens``).

    Before the current turn the window starts at a user message, never on a
    tool result (which would lose its call) nor on an assistant message
    (Anthropic and Gemini want the first non-system message to be the
    user's), so it may hold a few messages fewer than ``window_size``. When
    the current turn alone is longer, the window keeps its question and then
    the most recent tool exchanges that fit, cut at exchange boundaries (the
    question counts toward the size). Only when the question and the last
    exchange alone are larger is more kept, and a warning says so. System
    messages are always kept and do not count; tool results that answer no
    call never survive.

    Args:
        window_size: Most non-system messages to keep (at least 1).
        max_tokens: Also at most this many tokens (system messages included):
            a count, a fraction of the model's context window, or None. The
            window is cut when either limit is passed.
        token_counter: Counts tokens for ``max_tokens``.
        context_window: The window a fraction refers to (default: the model's).
        proactive_at: Reduce a request before sending it when its estimate
            passes this fraction of the window (None: wait for the error).
    """

    def __init__(
        self,
        window_size: int = 40,
        *,
        max_tokens: float | None = None,
        token_counter: TokenCounter | None = None,
        context_window: int | None = None,
        proactive_at: float | None = None,
    ) -> None:
        owner = "SlidingWindowContextManager"
        check_count(owner, "window_size", window_size)
        check_budget(owner, "max_tokens", max_tokens)
        check_window(owner, context_window, proactive_at)
        self.window_size = window_size
        self.max_tokens = max_tokens
        self.token_counter = as_token_counter(owner, token_counter)
        self.context_window = context_window
        self.proactive_at = proactive_at

    def bound(self, state: S) -> S:
        """Slide the window to the end of the conversation."""
        tokens = self.tokens_for("max_tokens", self.max_tokens)
        context = state.context
        index = state.message_index()
        fit = fit_context(
            context,
            index.system_positions,
            index.user_positions,
            max_messages=self.window_size,
            max_tokens=tokens,
            counter=self.token_counter,
        )
        warn_over_budget("SlidingWindowContextManager", fit, self.window_size, tokens)
        replace_context(state, drop_orphan_results(fit.kept(context, index.system_positions)))
        return state

    def __repr__(self) -> str:
        return (
            f"SlidingWindowContextManager(window_size={self.window_size}, "
            f"max_tokens={self.max_tokens})"
        )
