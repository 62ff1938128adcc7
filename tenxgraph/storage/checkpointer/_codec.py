"""Rows <-> objects for every backend: JSON text only, validated by pydantic.

Messages are stored one JSON document per log row and decoded in one
pydantic call over the joined rows, which is several times faster than one
call per row. Nothing here imports or instantiates a class named in stored
data (DESIGN.md invariant 3): values and metadata come back as plain JSON
data, messages through the declared ``Message`` model only.

A row that fails to decode raises ``CorruptRecordError`` naming the thread,
the row (seq or column) and the field; nothing is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.errors import CorruptRecordError, StateError
from tenxgraph.storage.checkpointer.base import Checkpoint, ThreadKey, ThreadWrite, Window

__all__ = [
    "EncodedWrite",
    "MessageRow",
    "check_page",
    "check_window",
    "decode_checkpoint",
    "decode_json_object",
    "decode_messages",
    "decode_window",
    "decode_window_messages",
    "encode_json",
    "encode_write",
    "json_contains",
    "window_reach",
    "window_seqs",
    "window_size",
]

Body = TypeVar("Body", str, bytes)


@dataclass(frozen=True, slots=True)
class MessageRow:
    """One log row ready to insert; ``seq`` is assigned by the backend inside its transaction."""

    message_id: str
    role: str
    usage: str | None
    """``TokenUsages`` as JSON, or None."""
    body: str
    """The whole message as JSON; the only column read back."""


@dataclass(frozen=True, slots=True)
class EncodedWrite:
    """A ``ThreadWrite`` with every JSON column already encoded (done outside any lock)."""

    messages: list[MessageRow]
    values: str
    window: str
    metadata: str | None
    """None keeps the stored metadata."""


def encode_json(what: str, value: Any) -> str:
    """Compact JSON text; anything but plain JSON data raises ``StateError`` naming ``what``."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StateError(
            f"{what} must be JSON data (str, number, bool, None, list, dict): {exc}"
        ) from None


def encode_write(key: ThreadKey, write: ThreadWrite) -> EncodedWrite:
    """Validate and encode a write before any transaction starts."""
    if write.expected_version < 0:
        raise ValueError(f"expected_version must be >= 0, got {write.expected_version}")
    rows = []
    for index, message in enumerate(write.new_messages):
        if not isinstance(message, Message):
            raise StateError(
                f"thread {key.thread_id!r}: new_messages[{index}] is a "
                f"{type(message).__name__}, not a Message"
            )
        if message.delta:
            raise StateError(
                f"thread {key.thread_id!r}: new_messages[{index}] is a streaming delta; "
                "only complete messages are stored"
            )
        usage = message.usages.model_dump_json() if message.usages is not None else None
        rows.append(MessageRow(str(message.message_id), message.role, usage, _dump(message)))
    where = f"thread {key.thread_id!r}:"
    return EncodedWrite(
        messages=rows,
        values=encode_json(f"{where} values", write.values),
        window=encode_json(f"{where} window", [[start, end] for start, end in write.window]),
        metadata=None
        if write.metadata is None
        else encode_json(f"{where} metadata", write.metadata),
    )


def _dump(message: Message) -> str:
    try:
        return message.model_dump_json()
    except ValueError as exc:  # pydantic's serialization errors derive from ValueError
        raise StateError(
            f"message {message.message_id!r} cannot be stored as JSON: {exc}"
        ) from None


def check_window(key: ThreadKey, window: Window, log_length: int) -> None:
    """Every range must be ints ``0 <= start <= end <= log_length``; any order is fine."""
    for index, (start, end) in enumerate(window):
        if type(start) is not int or type(end) is not int or not 0 <= start <= end <= log_length:
            raise StateError(
                f"thread {key.thread_id!r}: window[{index}] = ({start}, {end}) is not a range "
                f"of the log (0 <= start <= end <= {log_length})"
            )


def window_reach(key: ThreadKey, window: Window) -> int:
    """Check ``0 <= start <= end`` for every range; return the largest end (0 if none)."""
    reach = max((end for _, end in window), default=0)
    check_window(key, window, reach)
    return reach


def check_page(offset: int, limit: int | None) -> None:
    """Reject a negative offset or limit with a clear message."""
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")


def window_seqs(window: Window) -> list[int]:
    """The seqs a window lists, in window order."""
    return [seq for start, end in window for seq in range(start, end)]


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
        return MessagesAdapter.validate_json(joined)
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
    seqs = window_seqs(window)
    if [seq for seq, _ in rows] != seqs:
        by_seq = dict(rows)
        missing = [seq for seq in seqs if seq not in by_seq]
        if missing:
            raise CorruptRecordError(
                f"thread {key.thread_id!r} (user {key.user_id!r}): the window {window} names "
                f"{len(seqs)} messages but the log lacks {len(missing)} of them "
                f"(seqs {missing[:10]})"
            )
        rows = [(seq, by_seq[seq]) for seq in seqs]
    return decode_messages(key, seqs, [body for _, body in rows])


def decode_checkpoint(
    key: ThreadKey,
    version: int,
    node: str,
    step: int,
    log_length: int,
    values: Any,
    window: Any,
    created_at: float,
) -> Checkpoint:
    """A checkpoint row as every backend stores it (values and window as JSON)."""
    return Checkpoint(
        version=version,
        node=node,
        step=step,
        log_length=log_length,
        values=decode_json_object(key, "checkpoint values", values),
        window=decode_window(key, window, "checkpoint window"),
        created_at=created_at,
    )


def decode_json_object(key: ThreadKey, column: str, stored: Any) -> dict[str, Any]:
    """A JSON object column (``values``, ``metadata``), given as text or as decoded data."""
    data = _loads(key, column, stored)
    if not isinstance(data, dict):
        raise CorruptRecordError(
            f"thread {key.thread_id!r} (user {key.user_id!r}): column {column!r} holds a "
            f"{type(data).__name__}, expected a JSON object"
        )
    return data


def decode_window(key: ThreadKey, stored: Any, column: str = "window") -> Window:
    """A window column: a JSON list of ``[start, end]`` integer pairs."""
    data = _loads(key, column, stored)
    window: Window = []
    if isinstance(data, list):
        for pair in data:
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not all(type(bound) is int and bound >= 0 for bound in pair)
                or pair[0] > pair[1]
            ):
                break
            window.append((pair[0], pair[1]))
        else:
            return window
    raise CorruptRecordError(
        f"thread {key.thread_id!r} (user {key.user_id!r}): column {column!r} is not a list of "
        f"[start, end] seq ranges: {str(stored)[:200]!r}"
    )


def _loads(key: ThreadKey, column: str, stored: Any) -> Any:
    if not isinstance(stored, str | bytes):
        return stored  # a driver already decoded it (Postgres jsonb)
    try:
        return json.loads(stored)
    except ValueError as exc:
        raise CorruptRecordError(
            f"thread {key.thread_id!r} (user {key.user_id!r}): column {column!r} is not "
            f"valid JSON: {exc}"
        ) from None


def _corrupt(key: ThreadKey, row: str, exc: ValidationError) -> CorruptRecordError:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "body"
    return CorruptRecordError(
        f"thread {key.thread_id!r} (user {key.user_id!r}): {row} is corrupt at field "
        f"{field!r}: {error['msg']}"
    )


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
