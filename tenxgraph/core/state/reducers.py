"""Reducers: plain two-argument functions that merge an update into a state field.

Attach one to a field with ``Annotated[list[str], append_items]``. A field
without a reducer is replaced by the update.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any, TypeVar, cast

from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, ToolCallBlock
from tenxgraph.core.state.message_input import MessageLike, as_messages
from tenxgraph.errors import ConfigError

__all__ = [
    "add_messages",
    "append_items",
    "remove_tool_messages",
    "replace_messages",
    "replace_value",
]

T = TypeVar("T")


def add_messages(left: list[Message], right: Sequence[MessageLike] | MessageLike) -> list[Message]:
    """Append ``right`` to ``left``, skipping ids already in ``left`` and delta chunks.

    ``right`` may hold message-like values (``("user", "hi")``,
    ``{"role": "user", "content": "hi"}``, see ``message_input``), or be one;
    they become ``Message``s. Returns a new list.

    A plain list cannot remember its ids, so this reads every id in ``left``:
    O(len(left)), several times a list copy. Code that appends to one long
    history again and again should use ``AgentState.append_messages``, which
    keeps an index and costs O(new), as the graph runtime does. The read is
    one ``isdisjoint`` pass against the few new ids (no set of the old ones);
    only when an id repeats is a second pass made to find which.
    """
    wanted = [m for m in _messages(right) if m.delta is False]
    if not wanted:
        return list(left)
    ids = {m.message_id for m in wanted}
    if ids.isdisjoint(map(_message_id, left)):  # the usual call
        return left + wanted
    seen = ids.intersection(map(_message_id, left))
    return left + [m for m in wanted if m.message_id not in seen]


def _messages(right: Sequence[MessageLike] | MessageLike) -> Sequence[Message]:
    """``right`` as messages; a list of ``Message`` objects as it is (no conversion pass)."""
    if type(right) is list:
        for item in right:  # a loop, not all(...): no generator for the usual one message
            if type(item) is not Message:
                break
        else:
            return cast("list[Message]", right)
    return as_messages(right, "add_messages: right")


_message_id = attrgetter("message_id")


def replace_messages(
    left: list[Message], right: Sequence[MessageLike] | MessageLike
) -> list[Message]:
    """Replace the whole list by ``right`` (delta chunks still never stored).

    ``right`` may hold message-like values, as for ``add_messages``.
    """
    right = as_messages(right, "replace_messages: right")
    return [message for message in right if message.delta is False]


def append_items(left: list[T], right: list[T]) -> list[T]:
    """Append ``right`` to ``left``."""
    return [*left, *right]


def replace_value(left: Any, right: Any) -> Any:
    """Keep the update: the same as having no reducer, but explicit."""
    return right


def remove_tool_messages(messages: Sequence[Message]) -> list[Message]:
    """Drop every tool call with its result, as whole groups.

    Tool-role messages go; assistant messages lose their ``ToolCallBlock``s and
    go too when nothing else is left. The result is always well paired.
    """
    kept: list[Message] = []
    for message in messages:
        if message.role == "tool":
            continue
        calls = message.tool_calls()
        if not calls:
            kept.append(message)
            continue
        rest: list[ContentBlock] = [b for b in message.content if not isinstance(b, ToolCallBlock)]
        if rest:
            kept.append(message.model_copy(update={"content": rest, "tools_calls": None}))
    return kept


class MessageIndex:
    """The ids and system- and user-message positions of a growing message list.

    With it, merging one message into a long history costs O(1), and a context
    manager finds the system messages and the last question without scanning. The runtime keeps one
    per state (``AgentState.message_index``); it notices when the list was
    replaced, or changed length or its last message behind its back, and
    rebuilds itself then. It checks in O(1), so a message replaced in place
    in the middle of the list goes unseen (``ReplaceMessage`` is the way).
    """

    __slots__ = ("_ids", "_last", "_list", "_size", "system_positions", "user_positions")

    def __init__(self, messages: list[Message]) -> None:
        self._reset(messages)

    def _reset(self, messages: list[Message]) -> None:
        self._list = messages
        self._size = len(messages)
        self._last = messages[-1] if messages else None
        if not messages:  # every fresh state's: three comprehensions cost more than the rest
            self._ids, self.system_positions, self.user_positions = set(), [], []
            return
        self._ids = {message.message_id for message in messages}
        self.system_positions = [i for i, m in enumerate(messages) if m.role == "system"]
        self.user_positions = [i for i, m in enumerate(messages) if m.role == "user"]

    def hand_over(self, messages: list[Message]) -> MessageIndex:
        """An index of ``messages`` that takes this index's tables over, in O(1).

        ``messages`` must hold the same messages as the list this index covers
        (that list itself, or a copy of it). This index is retired: it forgets
        its tables and behaves as if it had never been built (it rebuilds
        itself if it is used again), so the two never share a growing id set.
        """
        if len(messages) != self._size or self._size < 0:
            raise ConfigError("hand_over needs a list with the same messages")
        twin = MessageIndex.__new__(MessageIndex)
        twin._list, twin._size, twin._last = messages, self._size, self._last
        twin._ids, twin.system_positions = self._ids, self.system_positions
        twin.user_positions = self.user_positions
        self._list, self._size, self._ids, self.system_positions = [], -1, set(), []
        self._last = None
        self.user_positions = []  # pragma: no mutate (a retired index rebuilds before a read)
        return twin

    def covers(self, messages: list[Message]) -> bool:
        """True when this index describes ``messages`` as it is now (see the class)."""
        return (
            messages is self._list
            and len(messages) == self._size
            and (not messages or messages[-1] is self._last)
        )

    @property
    def retired(self) -> bool:
        """True once ``hand_over`` gave this index's tables away."""
        return self._size < 0

    def direct_additions(self, messages: list[Message]) -> list[Message]:
        """Messages in ``messages`` that were added without this index (e.g. ``list.append``)."""
        if self.covers(messages) or self.retired:
            return []
        size = self._size
        grown = messages is self._list and len(messages) > size
        if grown and (size == 0 or messages[size - 1] is self._last):
            return messages[size:]  # only appended to
        return [m for m in messages if m.message_id not in self._ids]

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def extend_covered(self, messages: list[Message], new: list[Any]) -> list[Message] | None:
        """``extend`` for the run loop's usual merge, or None, changing nothing.

        None unless ``messages`` is as this index last saw it (no direct edits
        since) and ``new`` holds only ``Message`` objects (no edits, no
        message-like values, no subclasses): the general merge handles those.
        """
        if not self.covers(messages):
            return None
        for message in new:
            if type(message) is not Message:
                return None
        return self._append(messages, new)

    def extend(self, messages: list[Message], new: Sequence[Message]) -> list[Message]:
        """Append the ``new`` messages ``add_messages`` would keep; return those appended."""
        if not self.covers(messages):
            self._reset(messages)
        return self._append(messages, new)

    def _append(self, messages: list[Message], new: Sequence[Message]) -> list[Message]:
        """``extend`` on the list this index covers."""
        ids = self._ids
        added: list[Message] = []
        for message in new:
            if message.delta or message.message_id in ids:
                continue
            ids.add(message.message_id)
            if message.role == "system":
                self.system_positions.append(len(messages))
            elif message.role == "user":
                self.user_positions.append(len(messages))
            messages.append(message)
            added.append(message)
        self._size = len(messages)
        if added:
            self._last = added[-1]
        return added
