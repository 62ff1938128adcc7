"""Where a context may be cut, found by walking back from the end only as far as needed.

Every manager keeps a suffix of the conversation plus the system messages
before it. The suffix starts at a user message (a turn boundary) or, for the
summarizer's ``keep_recent``, at a group start (``pairing.group_starts``); in a
well-paired conversation neither separates a tool call from its result, so
the kept list is well paired too.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.pairing import group_starts
from tenxgraph.core.state.reducers import remove_tool_messages

__all__ = [
    "count_user_messages",
    "keep_from",
    "last_user_index",
    "nth_last_user_index",
    "replace_context",
    "snap_to_group_start",
    "strip_completed_tool_groups",
]


def nth_last_user_index(
    messages: Sequence[Message], n: int, *, before: int | None = None
) -> int | None:
    """Index of the ``n``-th most recent user message (before ``before``), or None.

    Walks back from the end and stops there: the cost is the size of the
    kept suffix, not of the history.
    """
    seen = 0
    end = len(messages) if before is None else before
    for index in range(end - 1, -1, -1):
        if messages[index].role == "user":
            seen += 1
            if seen == n:
                return index
    return None


def last_user_index(messages: Sequence[Message], *, before: int | None = None) -> int | None:
    """Index of the most recent user message (before ``before``), or None when there is none."""
    return nth_last_user_index(messages, 1, before=before)


def count_user_messages(messages: Sequence[Message]) -> int:
    """Number of user messages (user turns) in ``messages``."""
    return sum(1 for message in messages if message.role == "user")


def snap_to_group_start(messages: Sequence[Message], index: int) -> int:
    """Move ``index`` back to the nearest group start, so no tool result loses its call."""
    starts = group_starts(messages[: index + 1])
    return starts[-1] if starts else 0


def keep_from(
    messages: list[Message], start: int, system_positions: Sequence[int]
) -> list[Message]:
    """The messages from ``start`` on, preceded by the system messages before ``start``.

    ``system_positions`` are the (ascending) indexes of the system messages,
    as ``AgentState.message_index()`` keeps them, so nothing is scanned.
    """
    before = system_positions[: bisect_left(system_positions, start)]
    return [messages[p] for p in before] + messages[start:]


def strip_completed_tool_groups(messages: Sequence[Message]) -> list[Message]:
    """Remove tool calls and results, as whole groups, from every turn but the current one.

    The current turn (from the last user message on) keeps its tool traffic:
    the model is still working on those results, and hiding them would make it
    call the same tools again. Without a user message everything is current.
    """
    last_user = last_user_index(messages)
    if last_user is None:
        return list(messages)
    return remove_tool_messages(messages[:last_user]) + list(messages[last_user:])


def replace_context(state: AgentState, kept: list[Message]) -> bool:
    """Set ``state.context`` to ``kept`` unless nothing changed; return True when it changed.

    The old list is not modified (it may be shared, e.g. with the thread's
    message log); the messages themselves are never modified either.
    """
    current = state.context
    if len(kept) == len(current) and all(a is b for a, b in zip(kept, current, strict=True)):
        return False
    state.context = kept
    return True
