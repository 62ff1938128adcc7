"""Streaming reads: ``MediaStream`` (async) and ``SyncMediaStream``, which check what they read.

A stream yields the stored bytes chunk by chunk, as the backend reads them,
so a large file is never held whole. Every byte is hashed on the way: when
the last chunk has come, the SHA-256 must be the key and the length the
recorded size, else ``CorruptRecordError`` (a truncated file, a damaged
row). A consumer that stops early has not had its bytes verified.

``aopen`` returns an ``OpeningMedia``: await it for the stream, or use it
as ``async with store.aopen(ref) as stream``, which closes the stream (and
the file or cursor behind it) on the way out. The sync ``SyncMediaStream``
steps the same async stream one chunk per call through the sync bridge, so
there is one read path.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from tenxgraph._sync import run_sync
from tenxgraph.errors import CorruptRecordError

if TYPE_CHECKING:
    from tenxgraph.storage.media.base import MediaInfo

__all__ = ["MediaStream", "OpeningMedia", "SyncMediaStream"]


class MediaStream:
    """The bytes of one stored media object, as chunks; ``info`` describes it."""

    def __init__(self, info: MediaInfo, chunks: AsyncIterator[bytes]) -> None:
        """Verify ``chunks`` (the backend's read of ``info``) against the key and size."""
        self.info = info
        """Key, size, MIME type and creation time of what is being read."""
        self._chunks = chunks
        self._verified = self._verify(chunks)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        """The next chunk; at the end, the check of everything read."""
        return await anext(self._verified)

    async def _verify(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        digest, read, size = hashlib.sha256(), 0, self.info.size
        async for chunk in chunks:
            read += len(chunk)
            if read > size:
                raise self._corrupt(f"more than the recorded {size} bytes")
            digest.update(chunk)
            yield chunk
        if read != size:
            raise self._corrupt(f"{read} bytes, not the recorded {size}")
        if digest.hexdigest() != self.info.key:
            raise self._corrupt("bytes whose SHA-256 is not the key")

    def _corrupt(self, what: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"media {self.info.key} of user_id {self.info.user_id!r} is damaged: "
            f"reading it gave {what}"
        )

    async def aread(self) -> bytes:
        """The rest of the bytes, at once (verified)."""
        return b"".join([chunk async for chunk in self])

    async def aclose(self) -> None:
        """Stop reading and release the file or cursor (a finished stream needs none)."""
        if isinstance(self._verified, AsyncGenerator):
            await self._verified.aclose()
        if isinstance(self._chunks, AsyncGenerator):
            await self._chunks.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class OpeningMedia(Awaitable[MediaStream]):
    """What ``aopen`` returns: awaitable for the stream, or an async context manager over it."""

    def __init__(self, opener: Callable[[], Awaitable[MediaStream]]) -> None:
        """``opener`` looks the media up (raising ``MediaNotFoundError``) and starts the read."""
        self._opener = opener
        self._stream: MediaStream | None = None

    def __await__(self) -> Generator[Any, None, MediaStream]:
        return self._opener().__await__()

    async def __aenter__(self) -> MediaStream:
        self._stream = await self._opener()
        return self._stream

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stream is not None:
            await self._stream.aclose()


class SyncMediaStream:
    """``MediaStream`` for sync code: iterable (chunk by chunk) and a context manager."""

    def __init__(self, stream: MediaStream) -> None:
        """Step ``stream`` through the sync bridge, one chunk per ``next``."""
        self._stream = stream
        self.info = stream.info
        """Key, size, MIME type and creation time of what is being read."""

    def __iter__(self) -> Iterator[bytes]:
        """The chunks, one per step of the sync bridge."""
        while (chunk := run_sync(_next(self._stream))) is not None:
            yield chunk

    def read(self) -> bytes:
        """The rest of the bytes, at once (verified)."""
        return run_sync(self._stream.aread())

    def close(self) -> None:
        """Stop reading and release the file or cursor."""
        run_sync(self._stream.aclose())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


async def _next(stream: MediaStream) -> bytes | None:
    """The next chunk, or None at the end (StopAsyncIteration must not cross the bridge)."""
    try:
        return await anext(stream)
    except StopAsyncIteration:
        return None
