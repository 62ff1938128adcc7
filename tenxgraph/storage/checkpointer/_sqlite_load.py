"""A SQLite load of a long window: read in chunks by one thread, decoded by another meanwhile.

sqlite3 lets go of the GIL while a statement runs, and a packed read
(``PACKED_COLUMNS``) is one statement per range of rows, so the rows of a long
window are read in chunks of ``CHUNK`` messages, all in the load's one read
transaction, while a thread of its own decodes each chunk read before it. On
two free cores the read (a tenth of a 10,000-message load) then hides behind
the decoding instead of coming before it; on one core it costs the same
instructions as one read. A window shorter than ``CHUNKED_AT`` is read at once
(a thread's start would cost more than the overlap gives).

Each chunk is decoded as the whole window is (``join_packed``, then one
``validate_many``); when any chunk is not in the packed form, does not hold
its count of messages or does not validate, the load is read again as before
(``SqliteCheckpointer._load``: joined by SQL, then row by row, which names a
damaged row), so damaged rows raise exactly as they did.
"""

from __future__ import annotations

import threading
from itertools import chain
from queue import SimpleQueue
from typing import Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer._bulk_decode import decode_joined
from tenxgraph.storage.checkpointer._codec import (
    StateRow,
    decode_joined_thread,
    thread_of,
    window_size,
)
from tenxgraph.storage.checkpointer._sqlite_rows import join_packed
from tenxgraph.storage.checkpointer.base import StoredThread, Window

__all__ = ["CHUNK", "CHUNKED_AT", "ChunkDecoder", "decode_packed", "read_chunks", "split_window"]

CHUNK = 2_500
"""Messages a chunk holds: four for W4's 10,000, each a few milliseconds to decode."""

CHUNKED_AT = 2 * CHUNK
"""From this many messages a load reads its window in chunks."""


def split_window(window: Window, chunk: int = CHUNK) -> list[Window]:
    """``window`` cut into consecutive windows of ``chunk`` messages (the last one fewer)."""
    pieces: list[Window] = []
    piece: Window = []
    room = chunk
    for start, end in window:
        while start < end:
            taken = min(end - start, room)
            piece.append((start, start + taken))
            start, room = start + taken, room - taken
            if not room:
                pieces.append(piece)
                piece, room = [], chunk
    if piece:
        pieces.append(piece)
    return pieces


class ChunkDecoder:
    """Decodes packed chunks in a thread of its own, in the order the reader hands them over."""

    def __init__(self, sizes: list[int]) -> None:
        """Start the thread; it expects chunks of ``sizes`` messages, then ``None``."""
        self._sizes = sizes
        self._chunks: SimpleQueue[tuple[Any, ...] | None] = SimpleQueue()
        self._parts: list[list[Message]] = []
        self._chars = 0
        self._error: BaseException | None = None
        self.failed = False
        """Set once a chunk did not decode: the reader may stop reading."""
        self._thread = threading.Thread(target=self._run, name="tenxgraph-sqlite-load", daemon=True)
        self._thread.start()

    def put(self, packed: tuple[Any, ...] | None) -> None:
        """Hand a chunk's packed row over; ``None`` ends the stream."""
        self._chunks.put(packed)

    def result(self) -> tuple[list[Message], int] | None:
        """The window's messages and their JSON length; None if a chunk did not decode."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self.failed or len(self._parts) != len(self._sizes):
            return None
        return list(chain.from_iterable(self._parts)), self._chars

    def _run(self) -> None:
        sizes = iter(self._sizes)
        while (packed := self._chunks.get()) is not None:
            if self.failed:
                continue  # drain to the end the reader sends
            try:
                self._decode(packed, next(sizes, -1))
            except BaseException as exc:  # raised in the loading thread by ``result``
                self._error, self.failed = exc, True

    def _decode(self, packed: tuple[Any, ...], size: int) -> None:
        count, *columns = packed
        decoded = decode_joined(count, size, join_packed(count, *columns))
        if decoded is None:
            self.failed = True
            return
        self._parts.append(decoded[0])
        self._chars += decoded[1]


def read_chunks(conn: Any, query: str, tid: int, window: Window) -> ChunkDecoder:
    """``query`` over each chunk of ``window``, in the caller's transaction; decoded meanwhile."""
    pieces = split_window(window, CHUNK)
    decoder = ChunkDecoder([window_size(piece) for piece in pieces])
    try:
        for piece in pieces:
            if decoder.failed:
                break
            ranges = ",".join(f"[{start},{end}]" for start, end in piece)
            rows = conn.execute(query, (f"[{ranges}]", tid)).fetchall()  # stepped to its end
            decoder.put(rows[0])
    finally:
        decoder.put(None)
    return decoder


def decode_packed(
    key: ThreadKey, state: StateRow, window: Window, read: list[Any] | ChunkDecoder
) -> StoredThread | None:
    """The thread from its packed window (one row, or chunks); None: read it again otherwise."""
    if isinstance(read, ChunkDecoder):
        decoded = read.result()
        return None if decoded is None else thread_of(key, state, window, *decoded)
    ((count, *packed),) = read
    joined = join_packed(count, *packed)
    return None if joined is None else decode_joined_thread(key, state, window, count, joined)
