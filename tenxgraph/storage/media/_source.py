"""What ``put`` accepts, turned into one shape: an async iterator of equal-sized chunks.

Accepted: ``bytes``/``bytearray``/``memoryview``; a path (``os.PathLike``,
opened and closed here); a binary file object (anything with ``read(n)``,
sync or async); an async iterable of bytes; a sync iterable of bytes. The
type is checked when ``chunks_of`` is called, before anything is stored; a
``str`` is refused (text must be encoded, and a path string would be
ambiguous).

Blocking reads never run on the event loop: a sync file's ``read`` and a
sync iterable's ``next`` run in a worker thread, pulling about one chunk's
worth per hand-off. Chunks are re-cut to exactly ``chunk_size`` bytes (the
last may be shorter), so backends store fixed-size pieces, and a huge input
piece is sliced through a ``memoryview`` rather than copied around.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Iterable,
    Iterator,
)
from typing import Any, Protocol, TypeAlias

from tenxgraph.errors import ConfigError

__all__ = ["BinaryReadable", "MediaData", "chunks_of"]

Bytes = (bytes, bytearray, memoryview)


class BinaryReadable(Protocol):
    """A binary file: ``read(n)`` returns up to ``n`` bytes, ``b""`` at the end (or awaits them)."""

    def read(self, size: int, /) -> bytes | Awaitable[bytes]: ...


MediaData: TypeAlias = (
    bytes
    | bytearray
    | memoryview
    | os.PathLike[str]
    | BinaryReadable
    | AsyncIterable[bytes]
    | Iterable[bytes]
)
"""What ``MediaStore.put`` stores: bytes, a path, a binary file, or a (sync or async) stream."""


def chunks_of(data: object, chunk_size: int) -> AsyncIterator[bytes]:
    """``data``'s bytes as chunks of ``chunk_size`` (the last shorter); its type checked now."""
    if isinstance(data, Bytes):
        return _from_buffer(memoryview(data).cast("B"), chunk_size)
    if isinstance(data, str):
        raise ConfigError(
            "media data must be bytes, a binary file or a stream of bytes, got a str: "
            "encode text first (text.encode()), or pass a path as pathlib.Path"
        )
    if isinstance(data, os.PathLike):
        return _rechunk(_from_path(data, chunk_size), chunk_size)
    if callable(getattr(data, "read", None)):
        return _rechunk(_from_reader(data, chunk_size), chunk_size)
    if isinstance(data, AsyncIterable):
        return _rechunk(aiter(data), chunk_size, owned=False)
    if isinstance(data, Iterable) and not isinstance(data, dict):
        return _rechunk(_from_iterable(iter(data), chunk_size), chunk_size)
    raise ConfigError(
        "media data must be bytes, a path, a binary file (with read) or a sync or async "
        f"iterable of bytes, got {type(data).__name__}"
    )


async def _from_buffer(view: memoryview, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(view), size):
        yield bytes(view[start : start + size])


async def _from_path(path: os.PathLike[Any], size: int) -> AsyncIterator[bytes]:
    try:
        file = await asyncio.to_thread(open, path, "rb")
    except OSError as exc:
        raise ConfigError(f"cannot read media file {os.fspath(path)!r}: {exc}") from exc
    try:
        while piece := await asyncio.to_thread(file.read, size):
            yield piece
    finally:
        file.close()


async def _from_reader(reader: Any, size: int) -> AsyncIterator[object]:
    """Read ``reader`` to its end: awaited when ``read`` is async, else in a worker thread."""
    read = reader.read
    asynchronous = inspect.iscoroutinefunction(read)
    while True:
        piece = await read(size) if asynchronous else await asyncio.to_thread(read, size)
        if inspect.isawaitable(piece):
            piece = await piece
        if isinstance(piece, str):
            raise ConfigError(
                "the media file is open in text mode (its read returned a str); open it "
                "in binary mode ('rb')"
            )
        if not piece:
            return
        yield piece


async def _from_iterable(iterator: Iterator[object], size: int) -> AsyncIterator[object]:
    """Pull from a sync iterator in a worker thread, about ``size`` bytes per hand-off."""
    done = object()

    def pull() -> list[object]:
        pieces: list[object] = []
        total = 0
        while total < size:
            piece = next(iterator, done)
            if piece is done:
                pieces.append(done)
                break
            pieces.append(piece)
            total += len(piece) if isinstance(piece, Bytes) else 0
        return pieces

    while True:
        for piece in await asyncio.to_thread(pull):
            if piece is done:
                return
            yield piece


async def _rechunk(
    pieces: AsyncIterator[object], size: int, *, owned: bool = True
) -> AsyncIterator[bytes]:
    """Re-cut pieces of any size into ``size``-byte chunks; refuse pieces that are not bytes.

    Closing it closes ``pieces`` too when they are ``owned`` (made here: a
    file opened from a path is closed at once, not when collected).
    """
    try:
        async for chunk in _cut(pieces, size):
            yield chunk
    finally:
        if owned and isinstance(pieces, AsyncGenerator):
            await pieces.aclose()


async def _cut(pieces: AsyncIterator[object], size: int) -> AsyncIterator[bytes]:
    buffer = bytearray()
    async for piece in pieces:
        if not isinstance(piece, Bytes):
            raise ConfigError(
                f"a media stream must yield bytes, but it yielded {type(piece).__name__}"
            )
        view = memoryview(piece).cast("B")
        if buffer:
            taken = size - len(buffer)
            buffer += view[:taken]
            view = view[taken:]
            if len(buffer) < size:
                continue
            yield bytes(buffer)
            buffer.clear()
        while len(view) >= size:
            yield bytes(view[:size])
            view = view[size:]
        buffer += view
    if buffer:
        yield bytes(buffer)
