"""``SlidingWindowContextManager``: keep at most the last N messages, starting on a user turn."""

from __future__ import annotations

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.base import LocalContextManager, S, check_count
from tenxgraph.core.state.context.cuts import (
    keep_from,
    last_user_index,
    replace_context,
    snap_to_group_start,
)
from tenxgraph.core.state.context.overflow import shrink_tool_results
from tenxgraph.core.state.message import Message

__all__ = ["SlidingWindowContextManager"]


class SlidingWindowContextManager(LocalContextManager):
    """A window over the most recent ``window_size`` non-system messages.

    The window starts at the first user message inside it, never on a tool
    result (which would lose its call) nor on an assistant message (Anthropic
    and Gemini want the first non-system message to be the user's), so it may
    hold a few messages fewer than ``window_size``. When the current turn
    alone is longer than the window, the window starts at its user message:
    the last user message is always kept. System messages are always kept
    and do not count.

    Args:
        window_size: Most non-system messages to keep (at least 1).
    """

    def __init__(self, window_size: int = 40) -> None:
        check_count("SlidingWindowContextManager", "window_size", window_size)
        self.window_size = window_size

    def bound(self, state: S) -> S:
        """Slide the window to the end of the conversation."""
        self._slide(state, self.window_size)
        return state

    async def areduce_context(self, state: AgentState) -> bool:
        """Halve the window; with nothing to drop, shorten the largest tool outputs."""
        size = sum(1 for message in state.context if message.role != "system")
        return self._slide(state, max(1, size // 2)) or shrink_tool_results(state)

    def _slide(self, state: AgentState, size: int) -> bool:
        context = state.context
        start = _window_start(context, size)
        if start is None:
            return False
        return replace_context(
            state, keep_from(context, start, state.message_index().system_positions)
        )

    def __repr__(self) -> str:
        return f"SlidingWindowContextManager(window_size={self.window_size})"


def _window_start(context: list[Message], size: int) -> int | None:
    """Where a window of ``size`` non-system messages begins, or None if all fit."""
    seen = 0
    earliest = None
    for index in range(len(context) - 1, -1, -1):
        if context[index].role != "system":
            seen += 1
            if seen == size:
                earliest = index
                break
    if earliest is None or earliest == 0:
        return None
    for index in range(earliest, len(context)):
        if context[index].role == "user":
            return index
    last_user = last_user_index(context, before=earliest)
    if last_user is not None:
        return last_user
    return snap_to_group_start(context, earliest)
