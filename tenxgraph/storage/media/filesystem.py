"""``FilesystemMediaStore``: media as plain files in a directory, published by an atomic rename.

The default store of a local app, beside its SQLite file
(``FilesystemMediaStore.next_to("threads.db")`` uses ``threads.db-media/``,
named the way SQLite names its ``-wal`` and ``-shm`` files). Layout::

    root/
      uploads/                   puts in progress: <random>.part
      tenants/<sha256(user_id)>/ one directory per tenant
        user_id                  the tenant's id (UTF-8), to list tenants
        <key[:2]>/<key>          the bytes, exactly as put
        <key[:2]>/<key>.json     {"size", "mime_type", "created_at"}

No name under ``root`` comes from the caller: a tenant's directory is the
SHA-256 of its id (ids may hold ``/``, ``..`` or differ only in case on a
case-insensitive disk), and a key is 64 hex digits, checked before use.

A put writes ``uploads/<random>.part`` (same file system, so publishing is
a rename), then renames the ``.json`` and finally the bytes into place:
a reader sees an object only once its bytes file exists, and then whole.
Deleting removes the bytes first. A read holds the file open, so a delete
meanwhile does not cut it short (POSIX keeps an unlinked open file).

Decision, durability: with ``fsync=True`` (the default) the staged file
is flushed to disk before its rename and the directory after it, so after a
power cut an object is there whole or not at all, and a message saved after
the put (which references it) never outlives its media. That is two or three
fsyncs per new object (none when the bytes were already stored), paid only
by puts, which are rare next to turns. ``fsync=False`` keeps the atomic
renames (a killed process never leaves a partial object) but after a power
cut recent objects may be missing or damaged; a damaged one fails its
SHA-256 check when read. Use it for scratch data and tests.

Every blocking call runs in a worker thread, several per hand-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

from tenxgraph.errors import ConfigError, StorageError
from tenxgraph.storage.media._sniff import OCTET_STREAM
from tenxgraph.storage.media.base import (
    DEFAULT_MAX_BYTES,
    MediaInfo,
    MediaStore,
    Upload,
    not_found,
)

__all__ = ["FilesystemMediaStore"]

P = ParamSpec("P")
R = TypeVar("R")

FILE_CHUNK_SIZE = 1024 * 1024
"""Bytes per read and write hand-off: larger than the SQL pieces, as a file has no rows."""

_KEY_FILE = re.compile(r"[0-9a-f]{64}")
_FAN_DIR = re.compile(r"[0-9a-f]{2}")


class FilesystemMediaStore(MediaStore):
    """Media as files under one directory, tenants apart, each object published atomically."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        chunk_size: int = FILE_CHUNK_SIZE,
    ) -> None:
        """Keep media under ``root`` (created on first put); see the module for ``fsync``."""
        super().__init__(max_bytes=max_bytes, chunk_size=chunk_size)
        if not isinstance(root, (str, os.PathLike)) or not os.fspath(root):
            raise ConfigError(f"root must be a directory path, got {root!r}")
        self.root = Path(root)
        self.fsync = fsync

    @classmethod
    def next_to(cls, database: str | os.PathLike[str], **options: Any) -> FilesystemMediaStore:
        """The store beside a SQLite file: ``<database>-media/`` (``threads.db-media``)."""
        return cls(f"{os.fspath(database)}-media", **options)

    async def _call(self, function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``function(*args)`` in a worker thread; ``OSError`` becomes ``StorageError``."""
        try:
            return await asyncio.to_thread(function, *args, **kwargs)
        except OSError as exc:
            raise StorageError(f"media store at {self.root}: {exc}") from exc

    def _tenant_dir(self, user_id: str) -> Path:
        return self.root / "tenants" / hashlib.sha256(user_id.encode()).hexdigest()

    def _object_path(self, user_id: str, key: str) -> Path:
        return self._tenant_dir(user_id) / key[:2] / key

    async def _begin(self, user_id: str) -> Upload:
        return await self._call(_FileUpload.start, self, user_id)

    async def _stat(self, user_id: str, key: str) -> MediaInfo | None:
        return await self._call(_stat, user_id, self._object_path(user_id, key))

    async def _read(self, info: MediaInfo) -> AsyncIterator[bytes]:
        try:
            file = await asyncio.to_thread(open, info.location, "rb")
        except FileNotFoundError:
            raise not_found(info.user_id, info.key) from None
        except OSError as exc:
            raise StorageError(f"media store at {self.root}: {exc}") from exc
        try:
            while chunk := await self._call(file.read, self.chunk_size):
                yield chunk
        finally:
            file.close()

    async def _delete(self, user_id: str, key: str) -> bool:
        return await self._call(self._remove, self._object_path(user_id, key))

    def _remove(self, path: Path) -> bool:
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        with contextlib.suppress(FileNotFoundError):
            path.with_suffix(".json").unlink()
        if self.fsync:
            _sync_dir(path.parent)
        return True

    async def _list(self, user_id: str, after: str | None, limit: int | None) -> list[MediaInfo]:
        return await self._call(self._scan, user_id, after, limit)

    def _scan(self, user_id: str, after: str | None, limit: int | None) -> list[MediaInfo]:
        found: list[MediaInfo] = []
        tenant = self._tenant_dir(user_id)
        for fan in _sorted_names(tenant):
            if not _FAN_DIR.fullmatch(fan) or (after is not None and fan < after[:2]):
                continue
            for name in _sorted_names(tenant / fan):
                if limit is not None and len(found) >= limit:
                    return found
                if _KEY_FILE.fullmatch(name) and (after is None or name > after):
                    info = _stat(user_id, tenant / fan / name)
                    if info is not None:
                        found.append(info)
        return found

    async def _tenants(self) -> list[str]:
        return await self._call(self._read_tenants)

    def _read_tenants(self) -> list[str]:
        tenants = []
        for name in _sorted_names(self.root / "tenants"):
            directory = self.root / "tenants" / name
            try:
                user_id = (directory / "user_id").read_text("utf-8")
            except FileNotFoundError:
                continue
            if self._scan(user_id, None, 1):
                tenants.append(user_id)
        return tenants

    async def _purge(self, started_before: float) -> int:
        return await self._call(self._purge_uploads, started_before)

    def _purge_uploads(self, started_before: float) -> int:
        """Delete staged files last written before the cut-off (an idle put's too)."""
        purged = 0
        for name in _sorted_names(self.root / "uploads"):
            path = self.root / "uploads" / name
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < started_before:
                    path.unlink()
                    purged += 1
        return purged


class _FileUpload(Upload):
    """A put staged in ``uploads/<random>.part``, published by renames."""

    def __init__(self, store: FilesystemMediaStore, user_id: str, path: Path, file: IO[bytes]):
        self.store = store
        self.user_id = user_id
        self.path = path
        self.file = file

    @classmethod
    def start(cls, store: FilesystemMediaStore, user_id: str) -> _FileUpload:
        uploads = store.root / "uploads"
        _make_dirs(uploads, store.fsync)
        fd, name = tempfile.mkstemp(suffix=".part", dir=uploads)
        return cls(store, user_id, Path(name), os.fdopen(fd, "wb"))

    async def write(self, chunk: bytes) -> None:
        await self.store._call(self.file.write, chunk)

    async def commit(self, key: str, size: int, mime_type: str) -> MediaInfo:
        return await self.store._call(self._publish, key, size, mime_type)

    def _publish(self, key: str, size: int, mime_type: str) -> MediaInfo:
        store, sync = self.store, self.store.fsync
        self.file.flush()
        if sync:
            os.fsync(self.file.fileno())
        self.file.close()
        target = store._object_path(self.user_id, key)
        existing = _stat(self.user_id, target)
        if existing is not None:
            self.path.unlink()
            return existing
        tenant = store._tenant_dir(self.user_id)
        if not (tenant / "user_id").exists():
            _make_dirs(tenant, sync)
            _write_file(tenant / "user_id", self.user_id.encode(), store.root / "uploads", sync)
        _make_dirs(target.parent, sync)
        info = MediaInfo(self.user_id, key, size, mime_type, time.time(), str(target))
        meta = {"size": size, "mime_type": mime_type, "created_at": info.created_at}
        _write_file(target.with_suffix(".json"), json.dumps(meta).encode(), self.path.parent, sync)
        os.replace(self.path, target)
        if sync:
            _sync_dir(target.parent)
        return info

    async def abort(self) -> None:
        await asyncio.to_thread(self._discard)

    def _discard(self) -> None:
        self.file.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _stat(user_id: str, path: Path) -> MediaInfo | None:
    """The object whose bytes are at ``path``, or None; its ``.json`` says type and size.

    Without a readable ``.json`` (a crash between the two renames cannot
    cause that, as the ``.json`` comes first; a hand-made copy can) the
    size is the file's and the type ``application/octet-stream``.
    """
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    try:
        meta = json.loads(path.with_suffix(".json").read_bytes())
        size, mime_type, created_at = meta["size"], meta["mime_type"], meta["created_at"]
    except (OSError, ValueError, KeyError, TypeError):
        size, mime_type, created_at = stat.st_size, OCTET_STREAM, stat.st_mtime
    return MediaInfo(user_id, path.name, size, mime_type, created_at, str(path))


def _write_file(path: Path, data: bytes, staging: Path, sync: bool) -> None:
    """Write a small file whole: into ``staging``, then renamed over ``path``."""
    fd, name = tempfile.mkstemp(suffix=".part", dir=staging)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            if sync:
                file.flush()
                os.fsync(file.fileno())
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise


def _make_dirs(path: Path, sync: bool) -> None:
    """``mkdir -p``; with ``sync``, each new directory's entry is flushed in its parent."""
    if path.is_dir():
        return
    _make_dirs(path.parent, sync)
    with contextlib.suppress(FileExistsError):
        path.mkdir()
        if sync:
            _sync_dir(path.parent)


def _sync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename or unlink in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sorted_names(directory: Path) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
