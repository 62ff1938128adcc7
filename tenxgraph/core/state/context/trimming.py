"""``MessageContextManager``: keep the last N user turns, drop older messages."""

from __future__ import annotations

from tenxgraph.core.state.context.base import (
    LocalContextManager,
    S,
    check_budget,
    check_count,
    check_window,
)
from tenxgraph.core.state.context.cuts import (
    keep_from,
    replace_context,
    strip_completed_tool_groups,
)
from tenxgraph.core.state.context.fit import drop_orphan_results, fit_context, warn_over_budget
from tenxgraph.core.state.context.tokens import TokenCounter, as_token_counter
from tenxgraph.core.state.message import Message

__all__ = ["MessageContextManager"]


class MessageContextManager(LocalContextManager):
    """Trimming: keep everything from the ``max_messages``-th most recent user message on.

    Only user messages are counted: a user message with the assistant
    replies, tool calls and tool results that follow it is one turn. System
    messages are always kept, wherever they are. No model is called.

    With ``max_tokens`` the kept turns must also fit a token budget: older
    turns go first, then the current turn is cut at tool-exchange
    boundaries, keeping its question and its last exchange (see
    ``tenxgraph.core.state.context.fit``). Tool results that answer no call
    (orphans) never survive.

    Args:
        max_messages: How many user turns to keep (at least 1).
        remove_tool_msgs: Also drop tool calls and their results, as whole
            groups, from every turn but the current one (the model still
            needs the results it is working on). An assistant message with
            text and calls keeps its text.
        keep_first: Also keep the conversation's first non-system message
            (with its tool results, if it is a tool call), e.g. a task
            statement. Off by default: what must survive belongs in a system
            message.
        max_tokens: A token budget (an int), a fraction of the model's
            context window (a float in (0, 1]), or None (no token limit).
        token_counter: Counts tokens for ``max_tokens`` (~4 characters a
            token by default).
        context_window: The window fractions refer to (default: the model's).
        proactive_at: Reduce a request before sending it when its estimate
            passes this fraction of the window (None: wait for the error).
    """

    def __init__(
        self,
        max_messages: int = 10,
        remove_tool_msgs: bool = False,
        *,
        keep_first: bool = False,
        max_tokens: float | None = None,
        token_counter: TokenCounter | None = None,
        context_window: int | None = None,
        proactive_at: float | None = None,
    ) -> None:
        owner = "MessageContextManager"
        check_count(owner, "max_messages", max_messages)
        check_budget(owner, "max_tokens", max_tokens)
        check_window(owner, context_window, proactive_at)
        self.max_messages = max_messages
        self.remove_tool_msgs = remove_tool_msgs
        self.keep_first = keep_first
        self.max_tokens = max_tokens
        self.token_counter = as_token_counter(owner, token_counter)
        self.context_window = context_window
        self.proactive_at = proactive_at

    def bound(self, state: S) -> S:
        """Keep the last ``max_messages`` user turns (within ``max_tokens``) and the system ones."""
        context = state.context
        index = state.message_index()
        users = index.user_positions
        floor = users[-self.max_messages] if len(users) >= self.max_messages else 0
        systems = index.system_positions
        if self.keep_first and floor:
            systems = sorted({*systems, *_first_group(context, floor)})
        tokens = self.tokens_for("max_tokens", self.max_tokens)
        if tokens is None:
            kept = context if not floor else keep_from(context, floor, systems)
        else:
            fit = fit_context(
                context, systems, users, max_tokens=tokens, counter=self.token_counter, floor=floor
            )
            warn_over_budget("MessageContextManager", fit, None, tokens)
            kept = fit.kept(context, systems)
        if self.remove_tool_msgs:
            kept = strip_completed_tool_groups(kept)
        replace_context(state, drop_orphan_results(kept))
        return state

    def __repr__(self) -> str:
        return (
            f"MessageContextManager(max_messages={self.max_messages}, "
            f"remove_tool_msgs={self.remove_tool_msgs}, keep_first={self.keep_first}, "
            f"max_tokens={self.max_tokens})"
        )


def _first_group(context: list[Message], limit: int) -> range:
    """Positions of the first non-system message and its tool results, below ``limit``."""
    first = 0
    while first < limit and context[first].role == "system":
        first += 1
    end = first + 1
    if first < limit and context[first].tool_calls():
        while end < limit and context[end].role == "tool":
            end += 1
    return range(first, min(end, limit))
