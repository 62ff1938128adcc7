"""``MessageContextManager``: keep the last N user turns, drop older messages."""

from __future__ import annotations

from tenxgraph.core.state.context.base import LocalContextManager, S, check_count
from tenxgraph.core.state.context.cuts import (
    keep_from,
    nth_last_user_index,
    replace_context,
    strip_completed_tool_groups,
)
from tenxgraph.core.state.message import Message

__all__ = ["MessageContextManager"]


class MessageContextManager(LocalContextManager):
    """Trimming: keep everything from the ``max_messages``-th most recent user message on.

    Only user messages are counted: a user message with the assistant
    replies, tool calls and tool results that follow it is one turn. System
    messages are always kept, wherever they are. No model is called.

    Args:
        max_messages: How many user turns to keep (at least 1).
        remove_tool_msgs: Also drop tool calls and their results, as whole
            groups, from every turn but the current one (the model still
            needs the results it is working on).
        keep_first: Also keep the conversation's first non-system message
            (with its tool results, if it is a tool call), e.g. a task
            statement. Off by default: what must survive belongs in a system
            message.
    """

    def __init__(
        self, max_messages: int = 10, remove_tool_msgs: bool = False, *, keep_first: bool = False
    ) -> None:
        check_count("MessageContextManager", "max_messages", max_messages)
        self.max_messages = max_messages
        self.remove_tool_msgs = remove_tool_msgs
        self.keep_first = keep_first

    def bound(self, state: S) -> S:
        """Keep the last ``max_messages`` user turns and every system message."""
        context = state.context
        start = nth_last_user_index(context, self.max_messages)
        if start is None:
            kept = context
        else:
            systems = state.message_index().system_positions
            if self.keep_first:
                systems = sorted({*systems, *_first_group(context, start)})
            kept = keep_from(context, start, systems)
        if self.remove_tool_msgs:
            kept = strip_completed_tool_groups(kept)
        replace_context(state, kept)
        return state

    def __repr__(self) -> str:
        return (
            f"MessageContextManager(max_messages={self.max_messages}, "
            f"remove_tool_msgs={self.remove_tool_msgs}, keep_first={self.keep_first})"
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
