"""Rows <-> objects for every backend: JSON text only, validated by pydantic.

Messages are stored one JSON document per log row and decoded in one
pydantic call over the joined rows, which is several times faster than one
call per row. Nothing here imports or instantiates a class named in stored
data (data only on disk): values and metadata come back as plain JSON
data, messages through the declared ``Message`` model only.

A row that fails to decode raises ``CorruptRecordError`` naming the thread,
the row (seq or column) and the field; nothing is skipped, except in a thread
listing: there a damaged row is left out and logged (``list_threads``), so one
bad thread does not hide a tenant's others (``_listing``). Whatever the stored data, decoding
raises only library errors: never ``KeyError``, ``TypeError``,
``RecursionError`` or ``MemoryError`` (a window is checked against the log
length before any of its seqs is listed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from itertools import islice, pairwise
from typing import Any, NamedTuple, TypeVar

from pydantic import ValidationError

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message, compact_json, new_message_id
from tenxgraph.errors import (
    ConflictError,
    CorruptRecordError,
    StateError,
    ThreadBusyError,
    ThreadNotFoundError,
)
from tenxgraph.storage.checkpointer._bulk_decode import decode_joined, validate_many
from tenxgraph.storage.checkpointer._json_text import (
    ValuesText,
    encode_json,
    values_json,
    window_json,
)
from tenxgraph.storage.checkpointer.base import (
    Checkpoint,
    StoredMessage,
    StoredThread,
    ThreadStamp,
    ThreadWrite,
    Window,
)
from tenxgraph.storage.leases import STOP_REQUESTS

__all__ = [
    "EncodedWrite",
    "MessageRow",
    "check_stop_request",
    "check_window",
    "conflict",
    "decode_checkpoint",
    "decode_joined_thread",
    "decode_json_object",
    "decode_message_page",
    "decode_messages",
    "decode_thread",
    "decode_window",
    "decode_window_messages",
    "encode_json",
    "encode_write",
    "lease_lost",
    "missing_checkpoint",
    "new_incarnation",
    "new_tuple",
    "rewind_conflict",
    "stamp_of",
    "thread_not_found",
    "thread_of",
    "window_reach",
    "window_seqs",
    "window_size",
]

Body = TypeVar("Body", str, bytes)


class MessageRow(NamedTuple):
    """One log row ready to insert; ``seq`` is assigned by the backend inside its transaction.

    A named tuple: made once per saved message, and a frozen dataclass's
    ``__init__`` costs several times a tuple's.
    """

    message_id: str
    role: str
    usage: str | None
    """``TokenUsages`` as JSON, or None."""
    body: Any
    """The whole message as JSON (``compact_json``): the only column read back. A backend
    that stores a message otherwise gets what its ``encode_write(dump=...)`` made."""


class EncodedWrite(NamedTuple):
    """A ``ThreadWrite`` with every JSON column already encoded (done outside any lock).

    A named tuple, as ``MessageRow``: one is made per save.
    """

    messages: list[MessageRow]
    values: str
    window: str
    metadata: str | None
    """None keeps the stored metadata."""
    incarnation: str
    """The incarnation the write expects, or the new one when it creates the thread."""
    parent: int | None = None
    """The parent column of the new checkpoint: None for ``expected_version`` (a linear
    save, the usual case), else the older checkpoint a branch starts from (0: no parent)."""


def new_incarnation() -> str:
    """A new thread identity: 16 random hex digits (64 bits, so never reused in practice).

    From the message ids' generator (seeded by the OS, again in a forked child):
    unique as they are, without a system call per thread as ``os.urandom`` makes.
    """
    return new_message_id()[:16]


def encode_write(
    key: ThreadKey,
    write: ThreadWrite,
    *,
    usages: bool = True,
    dump: Callable[[Message], Any] = compact_json,
) -> EncodedWrite:
    """Validate and encode a write before any transaction starts (``usages``: the usage column).

    ``dump`` makes each message's ``MessageRow.body``; its ``ValueError`` (what
    JSON cannot hold) becomes ``StateError``.
    """
    expected, incarnation = write.expected_version, write.expected_incarnation
    if expected <= 0 or type(incarnation) is not str or not incarnation:  # else kept as it is
        if expected < 0:
            raise StateError(f"expected_version must be >= 0, got {expected}")
        incarnation = _write_incarnation(key, write)
    rows = []
    for index, message in enumerate(write.new_messages):
        if not isinstance(message, Message):
            raise StateError(
                f"thread {key.thread_id!r}: new_messages[{index}] is a "
                f"{type(message).__name__}, not a Message"
            )
        fields = message.__dict__  # one attribute lookup on the model, not four
        if fields["delta"]:
            raise StateError(
                f"thread {key.thread_id!r}: new_messages[{index}] is a streaming delta; "
                "only complete messages are stored"
            )
        usage = fields["usages"] if usages else None
        if usage is not None:
            usage = usage.model_dump_json(exclude_defaults=True)
        try:
            body = dump(message)
        except ValueError as exc:  # pydantic's serialization errors derive from ValueError
            why = f"message {message.message_id!r} cannot be stored as JSON: {exc}"
            raise StateError(why) from None
        row = (str(fields["message_id"]), fields["role"], usage, body)
        rows.append(new_tuple(MessageRow, row))
    values, parent, metadata = write.values, write.parent_version, write.metadata
    encoded = (
        rows,
        str(values) if type(values) is ValuesText else values_json(key, values),
        window_json(key, write.window),
        None if metadata is None else encode_json((key, "metadata"), metadata),
        incarnation,
        None if parent is None else _parent(key, write),
    )
    return new_tuple(EncodedWrite, encoded)


new_tuple = tuple.__new__
"""A named tuple from all its fields in one C call (the class's ``__new__`` is Python)."""


def _parent(key: ThreadKey, write: ThreadWrite) -> int | None:
    """The stored parent of a write's checkpoint (None: the one before it); checked first."""
    parent = write.parent_version
    if parent is None or parent == write.expected_version:
        return None
    if type(parent) is not int or not 0 <= parent < write.expected_version:
        raise StateError(
            f"thread {key.thread_id!r}: parent_version must be an earlier checkpoint's version "
            f"(0 to {write.expected_version}), got {parent!r}"
        )
    return parent


def parent_of(key: ThreadKey, version: int, stored: Any) -> int | None:
    """A checkpoint's parent from its stored column: NULL is the one before it, 0 none."""
    if stored is None:
        return version - 1 if version > 1 else None
    if type(stored) is not int or not 0 <= stored < version:
        raise _damaged(key, "parent_version", stored, "an earlier version")
    return stored or None


def conflict(
    key: ThreadKey, write: ThreadWrite, incarnation: str, found: ThreadStamp | None
) -> ConflictError:
    """The error for a write that lost its compare-and-swap to the stored ``found`` (None: absent).

    The error says the thread was deleted and re-created when it has another
    incarnation than the one the write was based on.
    """
    recreated = (
        found is not None and write.expected_version != 0 and found.incarnation != incarnation
    )
    actual = None if found is None else found.version
    return ConflictError(key.thread_id, write.expected_version, actual, recreated=recreated)


def rewind_conflict(key: ThreadKey, stamp: ThreadStamp, found: ThreadStamp | None) -> ConflictError:
    """The error for a rewind based on ``stamp`` when the thread is at ``found`` (None: absent)."""
    recreated = found is not None and found.incarnation != stamp.incarnation
    actual = None if found is None else found.version
    return ConflictError(key.thread_id, stamp.version, actual, recreated=recreated)


def lease_lost(key: ThreadKey, owner: str) -> ThreadBusyError:
    """The error for a call made under a lease that ``owner`` no longer holds."""
    return ThreadBusyError(
        key.thread_id,
        f"this run's lease ({owner}) expired and another run took the thread, or it was "
        "released; nothing was written",
    )


def missing_checkpoint(key: ThreadKey, version: int) -> StateError:
    """The error for a rewind to a checkpoint that retention (``keep_checkpoints``) dropped."""
    return StateError(
        f"thread {key.thread_id!r} has no checkpoint {version} (keep_checkpoints dropped it, "
        "or the thread never reached it), so it cannot be rewound to it"
    )


def check_stop_request(request: str) -> None:
    """Refuse a stop request other than ``interrupt`` and ``rollback``."""
    if request not in STOP_REQUESTS:
        raise StateError(f"a stop request must be one of {sorted(STOP_REQUESTS)}, got {request!r}")


def _write_incarnation(key: ThreadKey, write: ThreadWrite) -> str:
    """The incarnation a write expects; a new one when it creates the thread."""
    expected = write.expected_incarnation
    if write.expected_version == 0:
        if expected:
            raise StateError(
                f"thread {key.thread_id!r}: a write with expected_version 0 creates the thread "
                f"and makes its incarnation; expected_incarnation must be None, got {expected!r}"
            )
        return new_incarnation()
    if not expected or not isinstance(expected, str):
        raise StateError(
            f"thread {key.thread_id!r}: a write with expected_version "
            f"{write.expected_version} needs expected_incarnation, the thread's identity "
            f"(StoredThread.incarnation, or the stamp the last save returned); got {expected!r}"
        )
    return expected


def check_window(key: ThreadKey, window: Window, log_length: int) -> None:
    """A window to write: see ``window_problem``; a bad one raises ``StateError``.

    A run's usual window (one ``(start, end)`` tuple in a list) is passed here at once.
    """
    if type(window) is list and len(window) == 1 and type(window[0]) is tuple:
        start, end = window[0] if len(window[0]) == 2 else (None, None)
        if type(start) is int and type(end) is int and 0 <= start <= end <= log_length:
            return
    problem = window_problem(window, log_length)
    if problem is not None:
        raise StateError(f"thread {key.thread_id!r}: {problem}")


def window_problem(window: Sequence[Sequence[Any]], log_length: int | None) -> str | None:
    """What is wrong with ``window`` over a log of ``log_length`` entries, or None.

    Every range is ints ``0 <= start <= end <= log_length`` and no two ranges
    share a seq (a log entry is in the context at most once). Ranges may come
    in any order: a message removed from the context and added back keeps its
    seq, so the context can list an older entry after newer ones. Loading
    checks the same rule as saving, so what one backend writes every backend
    reads. ``log_length=None`` leaves the upper bound unchecked.
    """
    if not isinstance(window, list | tuple):
        return f"the window is {_preview(window, 30)}, not a list of [start, end] ranges"
    for index, pair in enumerate(window):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            return f"window[{index}] = {_preview(pair, 30)} is not a [start, end] range"
    if len(window) == 1:  # a run's usual window: one range, checked in one expression
        start, end = window[0]
        if (
            type(start) is int  # pragma: no mutate (the loop below checks it again)
            and type(end) is int  # pragma: no mutate (as above)
            and 0 <= start <= end  # pragma: no mutate (the loop below checks it again)
            and (log_length is None or end <= log_length)  # pragma: no mutate (as above)
        ):
            return None
    for index, (start, end) in enumerate(window):
        if (
            type(start) is not int
            or type(end) is not int
            or not 0 <= start <= end
            or (log_length is not None and end > log_length)
        ):
            bound = "end" if log_length is None else log_length
            return (
                f"window[{index}] = ({_preview(start, 30)}, {_preview(end, 30)}) is not a "
                f"range of the log (0 <= start <= end <= {bound})"
            )
    if len(window) > 1:
        ranges = sorted((start, end) for start, end in window if start < end)
        for (start, end), (next_start, next_end) in pairwise(ranges):
            if next_start < end:
                return (
                    f"window ranges ({start}, {end}) and ({next_start}, {next_end}) overlap: "
                    "a log entry can be in the context only once"
                )
    return None


def window_reach(key: ThreadKey, window: Window) -> int:
    """Check ``0 <= start <= end`` for every range; return the largest end (0 if none)."""
    reach = max((end for _, end in window), default=0)
    check_window(key, window, reach)
    return reach


def window_seqs(window: Window) -> list[int]:
    """The seqs a window lists, in window order."""
    return [seq for start, end in window for seq in range(start, end)]


def _iter_seqs(window: Window) -> Iterator[int]:
    for start, end in window:
        yield from range(start, end)


def window_size(window: Window) -> int:
    """How many messages a window holds."""
    return sum(end - start for start, end in window)


def decode_messages(key: ThreadKey, seqs: Sequence[int], bodies: Sequence[Body]) -> list[Message]:
    """Decode message rows in one pydantic call; a bad row raises ``CorruptRecordError``."""
    if not bodies:
        return []
    joined: str | bytes
    if isinstance(bodies[0], bytes):
        joined = b"[" + b",".join(bodies) + b"]"
    else:
        joined = "[" + ",".join(bodies) + "]"
    try:
        messages = validate_many(joined, len(bodies))
        if len(messages) == len(bodies):  # a row holding "m1, m2" joins into two messages
            return messages
    except ValidationError:
        pass
    # Slow path, only on failure: find the first bad row to name it.
    for seq, body in zip(seqs, bodies, strict=True):
        try:
            Message.model_validate_json(body)
        except ValidationError as exc:
            raise _corrupt(key, f"message seq {seq}", exc) from None
    raise CorruptRecordError(  # pragma: no cover - each row valid but the list not: impossible
        f"thread {key.thread_id!r} (user {key.user_id!r}): message rows failed to decode together"
    )


def decode_window_messages(
    key: ThreadKey, window: Window, rows: Sequence[tuple[int, Body]]
) -> list[Message]:
    """Decode the ``(seq, body)`` rows a window query returned, in window order.

    Rows in another order are put in window order; a seq of the window
    without a row is corruption, never skipped.
    """
    size = window_size(window)
    if len(rows) == size:  # then listing the window's seqs costs no more than the rows
        seqs = window_seqs(window)
        if [seq for seq, _ in rows] == seqs:
            return decode_messages(key, seqs, [body for _, body in rows])
    by_seq = dict(rows)
    where = f"thread {key.thread_id!r} (user {key.user_id!r}): the window {_preview(window)}"
    # Each seq walked is in by_seq or missing, so this stops within len(rows) + 10 steps
    # even when a damaged log length let the window name far more seqs than exist.
    missing = list(islice((seq for seq in _iter_seqs(window) if seq not in by_seq), 10))
    if missing:
        present = sum(1 for seq in by_seq if any(lo <= seq < hi for lo, hi in window))
        raise CorruptRecordError(
            f"{where} names {size} messages but the log lacks {size - present} of them "
            f"(seqs {missing})"
        )
    if len(by_seq) != size:
        raise CorruptRecordError(
            f"{where} names {size} messages but the log returned {len(rows)} rows for it"
        )
    seqs = window_seqs(window)
    rows = [(seq, by_seq[seq]) for seq in seqs]
    return decode_messages(key, seqs, [body for _, body in rows])


StateRow = tuple[Any, Any, Any, Any, Any, Any]
"""A thread's state row: version, log_length, values, window, metadata (JSON), incarnation."""


def decode_thread(
    key: ThreadKey, row: StateRow, window: Window, rows: Sequence[tuple[int, Body]]
) -> StoredThread:
    """A loaded thread: its state row, its decoded ``window`` and the window's message rows."""
    context = decode_window_messages(key, window, rows)
    thread = thread_of(key, row, window, context, sum(len(body) for _, body in rows))
    assert thread is not None  # None only stands for a window that did not decode
    return thread


def decode_joined_thread(
    key: ThreadKey, row: StateRow, window: Window, count: int, joined: str | None
) -> StoredThread | None:
    """``decode_thread`` from the window's row count and bodies joined by commas, in order.

    What SQLite's ``group_concat`` makes of the window's rows.

    None when the count is not the window's size or the text does not decode
    to exactly that many messages: the caller then reads and decodes the rows
    one by one (``decode_thread``), which names the missing or damaged row.
    A damaged state row raises here as there.
    """
    context, chars = decode_joined(count, window_size(window), joined) or (None, 0)
    return thread_of(key, row, window, context, chars)


def thread_of(
    key: ThreadKey, row: StateRow, window: Window, context: list[Message] | None, chars: int
) -> StoredThread | None:
    """The thread of a state row and its window's messages (``chars`` of stored JSON).

    A damaged state row raises; None when ``context`` is None (the window did not decode).
    """
    version, log_length, values, _, metadata, incarnation = row
    stamp, state = decode_version(key, version), decode_json_object(key, "values", values)
    data = decode_json_object(key, "metadata", metadata)
    if context is None:
        return None
    return StoredThread(
        key=key,
        version=stamp,
        log_length=log_length,
        values=state,
        window=window,
        context=context,
        metadata=data,
        incarnation=incarnation,
        context_chars=chars,
    )


def decode_message_page(key: ThreadKey, rows: Sequence[tuple[int, Body]]) -> list[StoredMessage]:
    """``(seq, body)`` log rows as stored messages, in the rows' order."""
    seqs = [seq for seq, _ in rows]
    messages = decode_messages(key, seqs, [body for _, body in rows])
    return [StoredMessage(seq, message) for seq, message in zip(seqs, messages, strict=True)]


def stamp_of(key: ThreadKey, row: Sequence[Any] | None) -> ThreadStamp | None:
    """An ``(incarnation, version)`` row as a stamp; None for no row."""
    return None if row is None else ThreadStamp(str(row[0]), decode_version(key, row[1]))


def decode_version(key: ThreadKey, stored: Any) -> int:
    """A state row's version, checked: an int of at least 1 (a save makes it), else corrupt."""
    if type(stored) is not int or stored < 1:
        raise _damaged(key, "version", stored, "an int >= 1")
    return stored


def _damaged(
    key: ThreadKey, column: str, stored: Any, expected: str, *, preview: bool = True
) -> CorruptRecordError:
    found = _preview(stored) if preview else stored
    where = f"thread {key.thread_id!r} (user {key.user_id!r})"
    return CorruptRecordError(f"{where}: column {column!r} holds {found}, expected {expected}")


def thread_not_found(key: ThreadKey) -> ThreadNotFoundError:
    """The error for a call that needs the thread to exist."""
    return ThreadNotFoundError(f"thread {key.thread_id!r} does not exist for user {key.user_id!r}")


def decode_checkpoint(
    key: ThreadKey,
    version: int,
    node: str,
    step: int,
    log_length: int,
    values: Any,
    window: Any,
    created_at: float,
    parent: int | None = None,
) -> Checkpoint:
    """A checkpoint row as every backend stores it (values and window as JSON).

    ``parent`` is the stored parent column (see ``parent_of``).
    """
    version = decode_version(key, version)
    return Checkpoint(
        version=version,
        node=node,
        step=step,
        log_length=log_length,
        values=decode_json_object(key, "checkpoint values", values),
        window=decode_window(key, window, log_length, "checkpoint window"),
        created_at=created_at,
        parent_version=parent_of(key, version, parent),
    )


def decode_json_object(key: ThreadKey, column: str, stored: Any) -> dict[str, Any]:
    """A JSON object column (``values``, ``metadata``), given as text or as decoded data."""
    data = _loads(key, column, stored)
    if not isinstance(data, dict):
        raise _damaged(key, column, f"a {type(data).__name__}", "a JSON object", preview=False)
    return data


def decode_window(
    key: ThreadKey, stored: Any, log_length: Any = None, column: str = "window"
) -> Window:
    """A window column: a JSON list of ``[start, end]`` pairs valid over ``log_length`` entries.

    The rule is ``window_problem``'s, the one every save checks; a window
    that breaks it (say ``[[0, 1000000000]]`` over a 3-entry log) raises
    ``CorruptRecordError`` naming the thread, before any seq is listed. Pass
    the log length whenever the window's seqs will be listed; without it
    (None) only the shape is checked.
    """
    where = f"thread {key.thread_id!r} (user {key.user_id!r})"
    if log_length is not None and (type(log_length) is not int or log_length < 0):
        raise CorruptRecordError(
            f"{where}: the log length {_preview(log_length)} is not a count of messages"
        )
    data = _loads(key, column, stored)
    if not isinstance(data, list) or not all(
        isinstance(pair, list) and len(pair) == 2 for pair in data
    ):
        raise CorruptRecordError(
            f"{where}: column {column!r} is not a list of [start, end] seq ranges: "
            f"{_preview(stored, 200)}"
        )
    problem = window_problem(data, log_length)
    if problem is not None:
        raise CorruptRecordError(f"{where}: column {column!r} is corrupt: {problem}")
    return [(start, end) for start, end in data]


def _loads(key: ThreadKey, column: str, stored: Any) -> Any:
    if not isinstance(stored, str | bytes):
        return stored  # a driver already decoded it (Postgres jsonb)
    try:
        return json.loads(stored)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise CorruptRecordError(
            f"thread {key.thread_id!r} (user {key.user_id!r}): column {column!r} is not "
            f"valid JSON: {str(exc)[:200]}"
        ) from None


def _preview(value: Any, size: int = 80) -> str:
    """A short repr of stored data, safe for any value (deep nesting, huge ints)."""
    if isinstance(value, str | bytes):
        value = value[: size + 1]  # pragma: no mutate (any cut past size - 2 previews the same)
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"
    return text if len(text) <= size else f"{text[: size - 3]}..."


def _corrupt(key: ThreadKey, row: str, exc: ValidationError) -> CorruptRecordError:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "body"
    return CorruptRecordError(
        f"thread {key.thread_id!r} (user {key.user_id!r}): {row} is corrupt at field "
        f"{field!r}: {error['msg']}"
    )
