"""Thread listings for every backend: rows to ``ThreadInfo``, damaged rows skipped and logged.

One damaged thread never hides a tenant's others: its row is left out and
logged. Metadata filters are Postgres' ``jsonb @>`` containment on every
backend (``json_contains``), so a filter means the same everywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import CorruptRecordError, InvalidIdError
from tenxgraph.storage.checkpointer._codec import _loads, _preview
from tenxgraph.storage.checkpointer.base import ThreadInfo

__all__ = ["ThreadRow", "decode_thread_row", "json_contains", "list_threads"]

logger = logging.getLogger("tenxgraph.storage")

ThreadRow = tuple[Any, Any, Any, Any, Any, Any]
"""A listing row: thread_id, version, log_length, metadata (JSON), created_at, updated_at."""


def list_threads(
    user_id: str,
    rows: Iterable[ThreadRow],
    wanted: Mapping[str, Any] | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[ThreadInfo]:
    """Decode a tenant's listing rows, keeping those whose metadata contains ``wanted``.

    A damaged row is left out and logged (a warning on the ``tenxgraph.storage``
    logger naming the thread and what is wrong), so one bad thread never hides
    the others. It keeps its place in paging, as it does where the database
    pages (``offset``/``limit`` here are for backends that page in Python):
    a page can come back shorter than ``limit``. Metadata that is not a JSON
    object matches no filter (as with Postgres' ``@>``); an empty filter is no
    filter.
    """
    wanted = wanted or None
    page: list[ThreadInfo | None] = []  # None: a damaged row
    for row in rows:
        try:
            info = decode_thread_row(user_id, row, wanted)
        except (CorruptRecordError, InvalidIdError) as exc:
            logger.warning(
                "thread listing of user %r skips thread %s: %s", user_id, _preview(row[0]), exc
            )
            page.append(None)
            continue
        if info is not None:
            page.append(info)
    page = page[offset:] if limit is None else page[offset : offset + limit]
    return [info for info in page if info is not None]


def decode_thread_row(
    user_id: str, row: ThreadRow, wanted: Mapping[str, Any] | None = None
) -> ThreadInfo | None:
    """One listing row, or None when its metadata does not contain ``wanted``.

    Raises ``CorruptRecordError`` (or ``InvalidIdError`` for a stored id the
    id rule now refuses) when the row is damaged.
    """
    thread_id, version, log_length, metadata, created_at, updated_at = row
    key = ThreadKey(thread_id, user_id)
    data = _loads(key, "metadata", metadata)
    if wanted is not None and not json_contains(data, wanted):
        return None
    where = f"thread {thread_id!r} (user {user_id!r})"
    if not isinstance(data, dict):
        raise CorruptRecordError(
            f"{where}: column 'metadata' holds a {type(data).__name__}, expected a JSON object"
        )
    for column, value, least in (("version", version, 1), ("log_length", log_length, 0)):
        if type(value) is not int or value < least:
            raise CorruptRecordError(
                f"{where}: column {column!r} holds {_preview(value)}, expected an int >= {least}"
            )
    for column, value in (("created_at", created_at), ("updated_at", updated_at)):
        if type(value) not in (int, float):
            raise CorruptRecordError(
                f"{where}: column {column!r} holds {_preview(value)}, expected a timestamp"
            )
    return ThreadInfo(key, version, log_length, data, float(created_at), float(updated_at))


def json_contains(stored: Any, wanted: Any) -> bool:
    """Postgres ``jsonb @>`` containment, so every backend filters metadata alike.

    Objects contain an object whose keys they all have with contained values;
    arrays contain an array whose every element some element contains;
    scalars must be equal (``true`` is not ``1``).
    """
    if isinstance(wanted, Mapping):
        return isinstance(stored, Mapping) and all(
            name in stored and json_contains(stored[name], value) for name, value in wanted.items()
        )
    if isinstance(wanted, list):
        return isinstance(stored, list) and all(
            any(json_contains(item, value) for item in stored) for value in wanted
        )
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return type(wanted) is type(stored) and wanted == stored
    return not isinstance(stored, Mapping | list) and bool(stored == wanted)
