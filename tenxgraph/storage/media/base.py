"""The media store contract: large bytes kept once, behind ``graph://media/{key}`` references.

A message carrying a 5 MB image inline would copy it into every stored row
and request; a media store keeps the bytes once and the message keeps a
``MediaRef(kind="url", url="graph://media/{key}")``.

- **Content-addressed.** The key is the SHA-256 of the bytes (64 lowercase
  hex digits), so the same bytes put twice by a tenant are stored once and
  get the same key. The key is checked before any I/O and cannot name a path.
- **Tenant-scoped.** Every call takes a ``user_id`` (``"default"`` when
  omitted, like ``ThreadKey``'s) checked by the same rule as thread ids. One
  tenant's media is invisible to another: the same bytes put by two tenants
  are two objects, and another tenant's key reads as missing.
- **Whole or nothing.** A put stages the bytes where readers cannot see
  them and publishes them in one atomic step at the end; a put that fails
  midway (its stream raised, the content failed its check, the size limit
  was reached, the task was cancelled) discards what it staged and leaves
  every stored object as it was.
- **Checked.** ``max_bytes`` bounds a put (``MediaTooLargeError``, stopped at
  the first byte over); the declared MIME type is checked against the first
  bytes for images, audio and PDF (``MediaTypeError``, see ``_sniff``).
- **Streamed.** ``put`` takes bytes, a path, a binary file or a stream and
  never needs the whole content in memory; ``open`` reads chunk by chunk,
  verifying the hash at the end; ``get`` is ``open`` read to the end.

The public methods are written once here; a backend implements seven small
primitives (``_begin``, ``_stat``, ``_read``, ``_delete``, ``_list``,
``_tenants``, ``_purge``; underscored because callers never use them) and
the ``Upload`` they stage puts in. ``tenxgraph.testing.media_stores``
holds the suite every backend passes. Async methods are the implementation;
each sync twin (``put`` for ``aput``...) runs it through the one sync bridge.
"""

from __future__ import annotations

import hashlib
import logging
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tenxgraph._sync import run_sync
from tenxgraph.core.state.ids import DEFAULT_USER, check_id
from tenxgraph.core.state.message_block import MediaRef
from tenxgraph.errors import (
    ConfigError,
    CorruptRecordError,
    MediaNotFoundError,
    MediaTooLargeError,
    StorageError,
)
from tenxgraph.storage._closing import Closing
from tenxgraph.storage.media._keys import media_key, media_url
from tenxgraph.storage.media._sniff import SNIFF_BYTES, check_mime_type, normalize
from tenxgraph.storage.media._source import MediaData, chunks_of
from tenxgraph.storage.media._stream import MediaStream, OpeningMedia, SyncMediaStream
from tenxgraph.utils import _otel as otel

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_MAX_BYTES",
    "DeleteListener",
    "MediaInfo",
    "MediaStore",
    "Upload",
]

logger = logging.getLogger("tenxgraph.storage.media")

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
"""The default size limit of one put: 512 MiB, the largest file the providers' file APIs take."""

DEFAULT_CHUNK_SIZE = 256 * 1024
"""Bytes per stored piece and per streamed chunk, unless a backend says otherwise."""


DeleteListener = Callable[[str, str], Awaitable[None]]
"""Called as ``listener(user_id, key)`` after the store deleted that media."""


@dataclass(frozen=True, slots=True)
class MediaInfo:
    """One stored media object: whose, which, how big, what type, since when."""

    user_id: str
    key: str
    """The SHA-256 of the bytes, 64 lowercase hex digits."""
    size: int
    """Length in bytes."""
    mime_type: str
    """The type recorded by the first put of these bytes (checked against them)."""
    created_at: float
    """When that put published them (UNIX time)."""
    location: str = field(default="", repr=False, compare=False)
    """The backend's own handle on the bytes (a blob id, a path); opaque to callers."""

    @property
    def url(self) -> str:
        """``graph://media/{key}``."""
        return media_url(self.key)

    def ref(self, *, mime_type: str | None = None, filename: str | None = None) -> MediaRef:
        """A ``MediaRef`` to put in a content block (``mime_type`` defaults to the recorded one)."""
        return MediaRef(
            kind="url",
            url=self.url,
            mime_type=mime_type or self.mime_type,
            size_bytes=self.size,
            sha256=self.key,
            filename=filename,
        )


class Upload(ABC):
    """One put's bytes, staged where readers cannot see them until ``commit``."""

    @abstractmethod
    async def write(self, chunk: bytes) -> None:
        """Stage the next chunk (chunks come in order, each ``chunk_size`` but the last)."""

    @abstractmethod
    async def commit(self, key: str, size: int, mime_type: str) -> MediaInfo:
        """Publish the staged bytes under ``key`` in one atomic step; return what is stored.

        When the tenant already has ``key`` (the same bytes), keep that object,
        discard the staged copy and return the existing object's info.
        """

    @abstractmethod
    async def abort(self) -> None:
        """Discard everything staged (after a failure; must not raise for a partial upload)."""


class MediaStore(Closing, ABC):
    """Large bytes stored once per tenant, addressed by their SHA-256, read as streams."""

    def __init__(
        self, *, max_bytes: int | None = DEFAULT_MAX_BYTES, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> None:
        """``max_bytes`` bounds one put (None: no bound); ``chunk_size`` is the piece size."""
        if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 0):
            raise ConfigError(f"max_bytes must be an int >= 0 or None, got {max_bytes!r}")
        if type(chunk_size) is not int or not 1024 <= chunk_size <= 64 * 1024 * 1024:
            raise ConfigError(f"chunk_size must be an int from 1 KiB to 64 MiB, got {chunk_size!r}")
        self.max_bytes = max_bytes
        self.chunk_size = chunk_size
        self._listeners: list[Callable[[], DeleteListener | None]] = []

    def add_delete_listener(self, listener: DeleteListener) -> None:
        """Have ``await listener(user_id, key)`` run after each delete that removed media.

        What a model's ``MediaResolver`` uses to delete the provider files it
        uploaded for the media. A bound method is held weakly (the store does
        not keep a model alive); a listener's failure is logged, not raised.
        """
        holder: Callable[[], DeleteListener | None]
        if hasattr(listener, "__self__") and hasattr(listener, "__func__"):
            holder = weakref.WeakMethod(listener)
        else:
            holder = lambda: listener  # noqa: E731 - a strong reference, like WeakMethod's call
        alive = [held for held in getattr(self, "_listeners", ()) if held() is not None]
        self._listeners = [*alive, holder]

    async def aput(
        self,
        data: MediaData,
        mime_type: str | None = None,
        *,
        user_id: str = DEFAULT_USER,
        filename: str | None = None,
    ) -> MediaRef:
        """Store ``data`` for ``user_id``; return a ``MediaRef`` whose url is ``graph://media/{key}``.

        ``data``: bytes, a path (``os.PathLike``), a binary file (sync or async
        ``read``), or a sync or async iterable of bytes. ``mime_type`` is
        checked against the first bytes (None: detected, else
        ``application/octet-stream``). The ref carries the checked type, the
        size, the SHA-256 and ``filename``. Putting bytes the tenant already
        has stores nothing new and returns the same url. On any failure
        nothing is stored.
        """
        check_id("user_id", user_id)
        declared = None if mime_type is None else normalize(mime_type)
        if isinstance(data, bytes | bytearray | memoryview):
            self._check_size(memoryview(data).nbytes)  # known now: refuse before staging
        putting = self._put(data, declared, user_id, filename)
        if otel.tracer() is None:
            return await putting
        attributes = {"tenxgraph.media.store": type(self).__name__}
        return await otel.spanned("tenxgraph.media.put", attributes, putting, _put_attributes)

    async def _put(
        self, data: MediaData, declared: str | None, user_id: str, filename: str | None
    ) -> MediaRef:
        chunks = chunks_of(data, self.chunk_size)
        upload = await self._begin(user_id)
        try:
            key, size, checked = await self._stage(upload, chunks, declared)
            info = await upload.commit(key, size, checked)
        except BaseException:
            await _abort(upload)
            raise
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
        return info.ref(mime_type=checked, filename=filename)

    async def _stage(
        self, upload: Upload, chunks: AsyncIterator[bytes], declared: str | None
    ) -> tuple[str, int, str]:
        """Write the chunks to ``upload``, hashing, counting and checking the type on the way."""
        digest, size, head = hashlib.sha256(), 0, b""
        checked: str | None = None
        async for chunk in chunks:
            size += len(chunk)
            self._check_size(size)
            if checked is None:
                head += chunk[: SNIFF_BYTES - len(head)]
                if len(head) >= SNIFF_BYTES:
                    checked = check_mime_type(declared, head)
            digest.update(chunk)
            await upload.write(chunk)
        if checked is None:
            checked = check_mime_type(declared, head)
        return digest.hexdigest(), size, checked

    def _check_size(self, size: int) -> None:
        if self.max_bytes is not None and size > self.max_bytes:
            raise MediaTooLargeError(
                f"media is over the media store's limit of {self.max_bytes} bytes "
                "(max_bytes); nothing was stored"
            )

    def put(
        self,
        data: MediaData,
        mime_type: str | None = None,
        *,
        user_id: str = DEFAULT_USER,
        filename: str | None = None,
    ) -> MediaRef:
        """Sync ``aput``."""
        return run_sync(self.aput(data, mime_type, user_id=user_id, filename=filename))

    async def ainfo(
        self, media: MediaRef | str, *, user_id: str = DEFAULT_USER
    ) -> MediaInfo | None:
        """What is stored under the ref, URL or key for ``user_id``, or None."""
        key = media_key(media)
        return await self._stat(check_id("user_id", user_id), key)

    def info(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> MediaInfo | None:
        """Sync ``ainfo``."""
        return run_sync(self.ainfo(media, user_id=user_id))

    async def aexists(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> bool:
        """Whether ``user_id`` has the media (another tenant's never counts)."""
        return await self.ainfo(media, user_id=user_id) is not None

    def exists(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> bool:
        """Sync ``aexists``."""
        return run_sync(self.aexists(media, user_id=user_id))

    def aopen(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> OpeningMedia:
        """A streaming read: ``async with store.aopen(ref) as stream: async for chunk in stream``.

        Raises ``MediaNotFoundError`` (when awaited or entered) if ``user_id``
        has no such media. The end of the stream verifies size and SHA-256.
        """
        key = media_key(media)
        check_id("user_id", user_id)
        return OpeningMedia(lambda: self._open(user_id, key))

    async def _open(self, user_id: str, key: str) -> MediaStream:
        info = await self._stat(user_id, key)
        if info is None:
            raise not_found(user_id, key)
        return MediaStream(info, self._read(info))

    def open(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> SyncMediaStream:
        """Sync ``aopen``: ``with store.open(ref) as stream: for chunk in stream``."""
        return SyncMediaStream(run_sync(self.aopen(media, user_id=user_id).__aenter__()))

    async def aget(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> bytes:
        """All the bytes at once (verified); ``MediaNotFoundError`` if missing.

        Prefer ``aopen`` for large media, which never holds them whole.
        """
        async with self.aopen(media, user_id=user_id) as stream:
            return await stream.aread()

    def get(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> bytes:
        """Sync ``aget``."""
        return run_sync(self.aget(media, user_id=user_id))

    async def adelete(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> bool:
        """Delete ``user_id``'s media; False if it had none. Other tenants' copies stay.

        Meant for lifecycle code that knows nothing references the media any
        more: a message still pointing at it would fail to resolve.
        """
        key = media_key(media)
        deleted = await self._delete(check_id("user_id", user_id), key)
        if deleted:
            await self._deleted(user_id, key)
        return deleted

    async def _deleted(self, user_id: str, key: str) -> None:
        for holder in getattr(self, "_listeners", ()):
            listener = holder()
            if listener is None:
                continue
            try:
                await listener(user_id, key)
            except Exception:
                logger.warning("a listener of the deletion of media %s failed", key, exc_info=True)

    def delete(self, media: MediaRef | str, *, user_id: str = DEFAULT_USER) -> bool:
        """Sync ``adelete``."""
        return run_sync(self.adelete(media, user_id=user_id))

    async def alist_media(
        self, user_id: str = DEFAULT_USER, *, after: str | None = None, limit: int | None = None
    ) -> list[MediaInfo]:
        """``user_id``'s media in key order: those after the key ``after``, at most ``limit``.

        Page through everything by passing the last key of a page as the next
        ``after``.
        """
        check_id("user_id", user_id)
        if after is not None:
            after = media_key(after)
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ConfigError(f"limit must be an int >= 0 or None, got {limit!r}")
        return await self._list(user_id, after, limit)

    def list_media(
        self, user_id: str = DEFAULT_USER, *, after: str | None = None, limit: int | None = None
    ) -> list[MediaInfo]:
        """Sync ``alist_media``."""
        return run_sync(self.alist_media(user_id, after=after, limit=limit))

    async def alist_tenants(self) -> list[str]:
        """Every ``user_id`` that has media, sorted."""
        return sorted(await self._tenants())

    def list_tenants(self) -> list[str]:
        """Sync ``alist_tenants``."""
        return run_sync(self.alist_tenants())

    async def apurge_uploads(self, older_than: float = 3600.0) -> int:
        """Discard uploads started over ``older_than`` seconds ago and never finished.

        A put cleans up after itself; only a process killed mid-put leaves its
        staged bytes behind. Those are never visible; this reclaims the
        space. Returns how many were discarded.
        """
        if not older_than >= 0:
            raise ConfigError(f"older_than must be >= 0 seconds, got {older_than!r}")
        return await self._purge(time.time() - older_than)

    def purge_uploads(self, older_than: float = 3600.0) -> int:
        """Sync ``apurge_uploads``."""
        return run_sync(self.apurge_uploads(older_than))

    async def aclose(self) -> None:
        """Release connections; a later call opens them again."""

    # What a backend implements. Arguments are checked: ids valid, keys well-formed.

    @abstractmethod
    async def _begin(self, user_id: str) -> Upload:
        """Start staging a put for ``user_id``."""

    @abstractmethod
    async def _stat(self, user_id: str, key: str) -> MediaInfo | None:
        """The stored object, or None."""

    @abstractmethod
    def _read(self, info: MediaInfo) -> AsyncIterator[bytes]:
        """The object's bytes in order, about ``chunk_size`` at a time, read as they are asked for.

        Raises ``MediaNotFoundError`` if the object is deleted before the
        reading could start or finish where the backend cannot keep it.
        """

    @abstractmethod
    async def _delete(self, user_id: str, key: str) -> bool:
        """Delete the object and its bytes; False if there was none."""

    @abstractmethod
    async def _list(self, user_id: str, after: str | None, limit: int | None) -> list[MediaInfo]:
        """The tenant's objects with keys above ``after``, in key order, at most ``limit``."""

    @abstractmethod
    async def _tenants(self) -> list[str]:
        """The user_ids with at least one object."""

    @abstractmethod
    async def _purge(self, started_before: float) -> int:
        """Discard unfinished uploads begun before that UNIX time; return how many."""


async def lost_piece(store: MediaStore, info: MediaInfo, piece: int) -> StorageError:
    """The error for a piece a backend could not find while reading ``info``.

    The object deleted meanwhile is ``MediaNotFoundError``; the object still
    there without its piece is damage (``CorruptRecordError``).
    """
    if await store._stat(info.user_id, info.key) is None:
        return not_found(info.user_id, info.key)
    return CorruptRecordError(
        f"media {info.key} of user_id {info.user_id!r} is damaged: its piece {piece} is missing"
    )


def _put_attributes(ref: MediaRef) -> dict[str, Any]:
    """A put's span attributes: the stored media's type and size, never its bytes."""
    return {
        "tenxgraph.media.type": ref.mime_type or "",
        "tenxgraph.media.bytes": ref.size_bytes or 0,
    }


def not_found(user_id: str, key: str) -> MediaNotFoundError:
    """The error for media ``user_id`` does not have (the same whether another tenant has it)."""
    return MediaNotFoundError(f"no media {key} for user_id {user_id!r}")


async def _abort(upload: Upload) -> None:
    """Discard a failed put's staged bytes; a failure to do so is logged, not raised.

    The error that failed the put is the one worth raising; the leftovers are
    invisible, and ``purge_uploads`` reclaims them.
    """
    try:
        await upload.abort()
    except Exception:
        logger.warning("discarding a failed media upload failed", exc_info=True)
