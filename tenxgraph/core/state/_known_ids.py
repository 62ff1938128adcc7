"""The message ids of the last few long lists ``add_messages`` read or returned.

``add_messages(left, new)`` must skip a new message whose id is already in
``left``. Reading every id of a long list touches every message object: at
100,000 messages that is about 20x the list copy the reducer returns anyway.
So the ids of a long list are read once and kept here with a copy of its
items; a later call with the same list object compares the list with that
copy (pointer by pointer, without touching the messages: a fraction of a
copy) and reuses the ids when nothing changed. A list the reducer returns is
remembered as "the list it read plus the messages it appended", so a chain
``history = add_messages(history, [m])`` reads the ids only once.

Decisions:

- Any change to the list (an item replaced by a different message, added,
  removed, reordered, the list cleared) fails the comparison and the ids are
  read again. What is not noticed: assigning a new ``message_id`` to a
  message object that is already in the list.
- Only lists of at least ``MIN_SIZE`` messages are remembered (a shorter one
  is read faster than it is compared), and only the last ``SLOTS`` of them:
  this module holds those lists and copies alive until newer ones push them
  out.
- The id set of a chain is a large base shared by the lists of the chain,
  never changed, plus a small set of what was appended since; the two merge
  when the small one passes 1/64 of the base.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from operator import attrgetter
from typing import NamedTuple

from tenxgraph.core.state.message import Message

__all__ = ["MIN_SIZE", "SLOTS", "KnownIds", "known_ids", "remember_merge"]

MIN_SIZE = 1024
"""Lists shorter than this are read each time, not remembered."""
SLOTS = 4
"""How many lists are remembered at once (the most recently used)."""

_message_id = attrgetter("message_id")


class KnownIds:
    """The ids of one list: a shared base set and a small set added since."""

    __slots__ = ("_base", "_extra")

    def __init__(self, base: frozenset[object], extra: frozenset[object] = frozenset()) -> None:
        self._base, self._extra = base, extra

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._extra or message_id in self._base

    def plus(self, messages: Iterable[Message]) -> KnownIds:
        """The ids with those of ``messages`` added (this set is not changed)."""
        extra = self._extra.union(map(_message_id, messages))
        if len(extra) > max(64, len(self._base) >> 6):
            return KnownIds(self._base | extra)
        return KnownIds(self._base, extra)


class _Entry(NamedTuple):
    messages: list[Message]
    """The list itself, held so that its ``id()`` is not reused while remembered."""
    snapshot: list[Message]
    """Its items when remembered, except ``tail``; never changed once made."""
    tail: list[Message]
    """Items after ``snapshot`` (what a merge appended); their ids are not in ``ids`` yet."""
    ids: KnownIds
    """The ids of ``snapshot``."""


_entries: dict[int, _Entry] = {}
_lock = threading.Lock()


def known_ids(messages: list[Message]) -> tuple[KnownIds, list[Message]]:
    """The ids in ``messages`` and a copy of its items, both remembered or read now."""
    with _lock:
        entry = _entries.get(id(messages))
    if (
        entry is not None
        and entry.messages is messages
        and len(messages) == len(entry.snapshot) + len(entry.tail)
    ):
        snapshot = entry.snapshot + entry.tail if entry.tail else entry.snapshot
        if messages == snapshot:  # identical items compare without being touched
            ids = entry.ids.plus(entry.tail) if entry.tail else entry.ids
            _remember(_Entry(messages, snapshot, [], ids))
            return ids, snapshot
    snapshot = list(messages)
    ids = KnownIds(frozenset(map(_message_id, snapshot)))
    _remember(_Entry(messages, snapshot, [], ids))
    return ids, snapshot


def remember_merge(
    merged: list[Message], ids: KnownIds, snapshot: list[Message], added: list[Message]
) -> None:
    """Remember ``merged``: the list ``snapshot`` (ids ``ids``) with ``added`` appended."""
    _remember(_Entry(merged, snapshot, added, ids))


def _remember(entry: _Entry) -> None:
    key = id(entry.messages)
    with _lock:
        _entries.pop(key, None)
        _entries[key] = entry
        while len(_entries) > SLOTS:
            del _entries[next(iter(_entries))]
