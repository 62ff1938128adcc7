"""Explicit message edits: remove one message, remove all, or replace one by id.

Returning a message whose id is already in context does nothing (the
messages reducer's rule), so changing history takes an explicit directive in a node's or a
tool's returned list::

    return [RemoveMessage("m-17"), ReplaceMessage(fixed), Message.text_message("new")]

Edits never rewrite the thread's log: a removal moves the context window,
a replacement is appended to the log as a new entry that takes the old
one's place in the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.errors import StateError

__all__ = ["REMOVE_ALL_MESSAGES", "MessageEdit", "RemoveMessage", "ReplaceMessage", "apply_edits"]

REMOVE_ALL_MESSAGES: Final = "__remove_all__"
"""``RemoveMessage(REMOVE_ALL_MESSAGES)`` empties the context window."""


@dataclass(frozen=True, slots=True)
class RemoveMessage:
    """Remove the message with this id from the context (the log keeps it)."""

    message_id: str | int


@dataclass(frozen=True, slots=True)
class ReplaceMessage:
    """Put ``message`` in the place of the context message with the same id."""

    message: Message


MessageEdit = RemoveMessage | ReplaceMessage


def apply_edits(
    state: AgentState,
    items: Sequence[Message | MessageEdit],
    removed: set[str | int] | None = None,
) -> list[Message]:
    """Apply messages and edits in order; return the messages added or put in place.

    Plain messages merge by add_messages' rules. An edit naming an id that
    is not in context is an error, and nothing is changed then. Removing an
    id that this update already removed does nothing (LangGraph's rule for
    one list): ``removed`` holds those ids and is shared by the parts of one
    node's output, so two tool calls of one step may both remove a message.
    """
    context = list(state.context)
    positions = {message.message_id: i for i, message in enumerate(context)}
    added: list[Message] = []
    removed = set() if removed is None else removed
    changed = False
    for item in items:
        if isinstance(item, Message):
            if item.delta or item.message_id in positions:
                continue
            positions[item.message_id] = len(context)
            context.append(item)
            added.append(item)
        elif isinstance(item, RemoveMessage):
            if item.message_id == REMOVE_ALL_MESSAGES:
                removed.update(positions)
                context, positions = [], {}
            elif item.message_id not in removed or item.message_id in positions:
                context[_position(positions, item.message_id, "remove")] = None  # type: ignore[call-overload]
                del positions[item.message_id]
                removed.add(item.message_id)
            changed = True
        else:
            index = _position(positions, item.message.message_id, "replace")
            context[index] = item.message
            added.append(item.message)
    if changed:
        context = [message for message in context if message is not None]
    state.context = context
    state.message_index()  # index the new list, so these changes are not seen twice
    return added


def _position(positions: dict[str | int, int], message_id: str | int, verb: str) -> int:
    try:
        return positions[message_id]
    except KeyError:
        raise StateError(
            f"cannot {verb} message {message_id!r}: it is not in the context"
        ) from None
