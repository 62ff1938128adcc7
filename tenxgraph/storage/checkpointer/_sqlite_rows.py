"""The SQLite checkpointer's compact row format: what a message row and a checkpoint row hold.

A **message row** keeps its 128-bit hex id as a 16-byte blob (``mid``) and its
timestamp as the text of its shortest repr (``ts``, 18 bytes where the member
took 30), and its body holds the other members of ``compact_json``'s object,
without the opening brace. Reads put the object back together in SQL
(``MESSAGE_BODY``: two concatenations and a ``hex``), so the rows decode as
before in one pydantic call. Any id or timestamp of another form stays in the
body, and a row with neither column set is the whole object: every row
written before these columns existed reads as it did. A load of many rows reads them
packed instead (``PACKED_COLUMNS``: the ids, timestamps and bodies each as one
value) and ``join_packed`` puts the objects together in Python: SQLite's
per-row string functions cost several times the few C-level passes that
need. The timestamp is text,
not a REAL: SQLite prints a double with 15 digits (not the same float back),
and rebuilding a decimal from an integer in SQL cost a load of 10,000
messages more than the 9 bytes it saves.

A **checkpoint row** keeps its values compressed (raw deflate, primed with
``_VALUES_DICTIONARY``, a typical runtime state row: a checkpoint's values
differ from it in a few numbers, so about 165 bytes become about 20) and its
window empty when it is the whole log ``[[0, log_length]]``, as a linear
thread's always is. Values text over ``_COMPRESS_AT_MOST`` characters is kept
as text (compressing it would cost the save more than the bytes are worth), as
is text that would not shrink. Decoding reads either form; a blob that does
not inflate raises ``CorruptRecordError``. The thread's state row, the one a
load reads, stays plain JSON.
"""

from __future__ import annotations

import math
import re
import zlib
from itertools import chain, repeat
from typing import Any

from pydantic_core import to_json

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message, compact_data
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer.base import Window

__all__ = [
    "MESSAGE_BODY",
    "PACKED_COLUMNS",
    "MessageParts",
    "inflate_checkpoint",
    "inflate_values",
    "inflate_window",
    "join_packed",
    "message_parts",
    "pack_values",
    "pack_window",
]

MessageParts = tuple[bytes | None, str | None, str]
"""A message row's ``mid``, ``ts`` and ``body`` columns."""

_HEX_ID = re.compile(r"[0-9a-f]{32}").fullmatch

MESSAGE_BODY = (
    "CASE WHEN m.mid IS NULL AND m.ts IS NULL THEN m.body ELSE '{' "
    "|| coalesce('\"message_id\":\"' || lower(hex(m.mid)) || '\",', '') "
    "|| coalesce('\"timestamp\":' || m.ts || ',', '') || m.body END"
)
"""SQL for a message row's whole JSON object (the table named ``m``), as ``compact_json``
wrote it but for the order of the members."""

_BODY_END = ",\x1e"
"""What ends each packed body but the last: the comma between the objects, then a control
character that JSON text never holds unescaped, to split on."""

PACKED_COLUMNS = (
    "count(*), sum(length(m.mid) = 16 AND m.ts IS NOT NULL), "
    "CAST(group_concat(m.mid, '') AS BLOB), group_concat(m.ts), "
    f"group_concat(m.body, '{_BODY_END}')"
)
"""SQL for a range of message rows (the table named ``m``) packed into one row, for
``join_packed``: the count, how many rows are in the packed form (a 16-byte id and a
timestamp), and the ids, the timestamps and the bodies, each concatenated in row order."""


def join_packed(count: int, packed: Any, ids: Any, stamps: Any, bodies: Any) -> str | None:
    """The ``count`` rows of ``PACKED_COLUMNS`` as their JSON objects joined by commas.

    The text ``MESSAGE_BODY`` gives each row, joined as ``group_concat`` does.
    None when a row is not in the packed form or a column does not split into
    ``count`` parts (a timestamp holding a comma, a body the separator): the
    caller then reads the rows as ``MESSAGE_BODY`` puts them together.
    """
    if not count:
        return ""
    if packed != count or type(ids) is not bytes or len(ids) != 16 * count:
        return None
    if type(stamps) is not str or type(bodies) is not str:
        return None
    id_list = ids.hex("\x1e", 16).split("\x1e")
    stamp_list = stamps.split(",")
    body_list = bodies.split("\x1e")
    if len(stamp_list) != count or len(body_list) != count:
        return None
    return "".join(
        chain.from_iterable(
            zip(
                repeat('{"message_id":"'),
                id_list,
                repeat('","timestamp":'),
                stamp_list,
                repeat(","),
                body_list,
            )
        )
    )


def message_parts(message: Message) -> MessageParts:
    """A message's row columns: ``(mid, ts, body)``; raises ``ValueError`` as ``compact_json``.

    The id and timestamp leave the body only in the forms ``MESSAGE_BODY``
    writes back exactly: 32 lowercase hex digits, and a finite float (its repr
    is a JSON number that parses back to the same float).
    """
    data = compact_data(message)
    mid = data["message_id"]
    packed_id = None
    if type(mid) is str and _HEX_ID(mid):
        packed_id = bytes.fromhex(mid)
        del data["message_id"]
    stamp = data["timestamp"]
    packed_ts = None
    if type(stamp) is float and math.isfinite(stamp):
        packed_ts = repr(stamp)
        del data["timestamp"]
    body = to_json(data, inf_nan_mode="null").decode()
    if packed_id is None and packed_ts is None:
        return None, None, body
    return packed_id, packed_ts, body[1:]


_VALUES_DICTIONARY = (
    b'"tool_ledger":{},"interrupt_value":null,"next_node":"tools","status":"failed",'
    b'"status":"interrupted","status":"running","next_node":"'
    b'{"context_summary":null,"app_state":{},"structured_response":null,"execution_meta":'
    b'{"current_node":"answer","step":1,"status":"completed","turn_start":'
    b'{"context_summary":null,"app_state":{},"structured_response":null,"execution_meta":'
    b'{"current_node":"__start__","step":0,"status":"running","turn_start":'
)
"""Format 1's preset dictionary: never changed (a new one is a new format byte)."""

_FORMAT_1 = b"\x01"
_COMPRESS_AT_MOST = 16_384
"""Characters of values text compressed at most (about 40 µs of deflate)."""


_PRIMED = zlib.compressobj(6, zlib.DEFLATED, -10, 1, zlib.Z_FILTERED, _VALUES_DICTIONARY)
"""Format 1's compressor with its dictionary loaded, never used itself: each save compresses
with a copy (setting a dictionary up costs a quarter of a small row's compression)."""


def pack_values(text: str) -> str | bytes:
    """A checkpoint's values column: format 1's blob when it is smaller, else the text."""
    if len(text) > _COMPRESS_AT_MOST:
        return text
    deflate = _PRIMED.copy()
    packed = _FORMAT_1 + deflate.compress(text.encode()) + deflate.flush()
    return packed if len(packed) < len(text) else text


def inflate_values(key: ThreadKey, stored: Any) -> Any:
    """A checkpoint's values column as JSON text (a blob inflated), for ``decode_checkpoint``."""
    if not isinstance(stored, bytes):
        return stored
    try:
        if stored[:1] != _FORMAT_1:
            raise zlib.error(f"unknown format byte {stored[:1]!r}")
        inflate = zlib.decompressobj(-15, _VALUES_DICTIONARY)
        text = inflate.decompress(stored[1:]) + inflate.flush()
        if not inflate.eof:
            raise zlib.error("the stream is cut short")
    except zlib.error as exc:
        raise CorruptRecordError(
            f"thread {key.thread_id!r} (user {key.user_id!r}): column 'checkpoint values' "
            f"is not a compressed JSON object: {exc}"
        ) from None
    return text


def pack_window(text: str, window: Window, log_length: int) -> str:
    """A checkpoint's window column: empty for the whole log, else the window's JSON."""
    if len(window) == 1 and window[0][0] == 0 and window[0][1] == log_length:
        return ""
    return text


def inflate_window(stored: Any, log_length: Any) -> Any:
    """A checkpoint's window column as JSON text: empty is the whole log."""
    if stored == "" and type(log_length) is int:
        return f"[[0,{log_length}]]"
    return stored


def inflate_checkpoint(key: ThreadKey, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A checkpoint row (``version, node, step, log_length, values, window, ...``) as text."""
    return (
        *row[:4],
        inflate_values(key, row[4]),
        inflate_window(row[5], row[3]),
        *row[6:],
    )
