"""``InMemoryCheckpointer``: the contract in one process's memory, for tests and short scripts.

Messages are kept as their JSON bytes, not as live objects: nothing a caller
mutates after a save can change stored data, and a message costs its JSON
size plus a few dozen bytes. Checkpoints are kept as their JSON rows too;
every ``_BATCH`` of them is sealed into one zlib-compressed JSON list
(consecutive checkpoints differ in a few numbers, so a sealed one costs some
tens of bytes instead of some hundreds), opened again only to read or cut
the history. One lock per instance makes every method atomic for concurrent
tasks and threads; decoding happens outside it.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from tenxgraph.core.state.ids import DEFAULT_USER, ThreadKey, check_id
from tenxgraph.core.state.message import Message, compact_json_bytes
from tenxgraph.storage.checkpointer._codec import (
    check_stop_request,
    check_window,
    conflict,
    decode_checkpoint,
    decode_json_object,
    decode_messages,
    decode_version,
    decode_window,
    encode_write,
    lease_lost,
    missing_checkpoint,
    new_tuple,
    rewind_conflict,
    thread_not_found,
)
from tenxgraph.storage.checkpointer._listing import list_threads
from tenxgraph.storage.checkpointer._media import (
    after_save,
    delete_with_media,
    media_policy,
    offload,
)
from tenxgraph.storage.checkpointer.base import (
    Checkpoint,
    Checkpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
    ThreadStamp,
    ThreadWrite,
    Window,
    check_keep,
    check_limit,
    check_page,
)
from tenxgraph.storage.leases import ThreadLeases

if TYPE_CHECKING:
    from tenxgraph.storage.media.base import MediaStore
    from tenxgraph.storage.media.offload import MediaPolicy

__all__ = ["InMemoryCheckpointer"]


class _Checkpoint(NamedTuple):
    """One checkpoint's row, as read (a thread holds its fields flat: ``_Thread.newest``)."""

    version: int
    node: str
    step: int
    log_length: int
    values: str
    window: str
    created_at: float
    parent: int | None = None
    """The stored parent (``_codec.parent_of``): None for the checkpoint before it."""


_BATCH = 16
"""Checkpoints sealed together; a thread's newest ones (fewer than this) stay open."""

_WIDTH = len(_Checkpoint._fields)
"""Items a checkpoint takes in ``_Thread.newest``."""


@dataclass(frozen=True, slots=True)
class _Sealed:
    """``count`` consecutive checkpoints, oldest first, as one zlib-compressed JSON list."""

    count: int
    blob: bytes

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> _Sealed:
        """Seal ``rows``: each a checkpoint's fields in ``_Checkpoint``'s order."""
        # no mutate: any spacing, escaping or compression level reads back the same
        text = json.dumps(rows, separators=(",", ":"), ensure_ascii=False)  # pragma: no mutate
        blob = zlib.compress(text.encode(), 1)  # pragma: no mutate
        return cls(len(rows), blob)

    def open(self) -> list[_Checkpoint]:
        return [_Checkpoint(*row) for row in json.loads(zlib.decompress(self.blob))]


def _split(flat: list[Any]) -> list[list[Any]]:
    """``_Thread.newest``'s flat fields cut into one list per checkpoint, oldest first."""
    return [flat[start : start + _WIDTH] for start in range(0, len(flat), _WIDTH)]


def _rows(flat: list[Any]) -> list[_Checkpoint]:
    """The checkpoints of ``_Thread.newest``'s flat fields, oldest first."""
    return [_Checkpoint(*row) for row in _split(flat)]


@dataclass(slots=True)
class _Lease:
    owner: str
    expires_at: float
    """``time.monotonic()`` seconds: one process, so its clock is the only one."""
    stop: str | None = None


@dataclass(slots=True)
class _Thread:
    """A thread's row, log and checkpoints.

    A store holds many threads for a long time, and every container object it
    keeps counts toward the cyclic GC's next collection, which then walks all
    the young objects of the process (a run's, a warm thread's): so a thread
    keeps a few containers whatever its number of checkpoints, not one per save.
    """

    incarnation: str
    version: int
    values: str
    window: str
    metadata: str
    created_at: float
    updated_at: float
    log: list[bytes]
    newest: list[Any]
    """The checkpoints not sealed yet (fewer than ``_BATCH``), oldest first, as one flat
    list of their fields, ``_WIDTH`` items each (see the class's docstring)."""
    sealed: list[_Sealed] | None = None
    """The older checkpoints, oldest first (None until a batch is sealed: W1's threads
    never have one)."""
    dropped: int = 0
    """How many of the first sealed batch's checkpoints retention dropped (still in it)."""
    count: int = 0
    """How many checkpoints the thread has: sealed (less ``dropped``) and newest."""

    def add(self, checkpoint: tuple[Any, ...], keep: int | None) -> None:
        """Append a checkpoint's fields, seal a full batch, drop the oldest over ``keep``."""
        newest = self.newest
        newest += checkpoint
        self.count += 1
        if len(newest) >= _BATCH * _WIDTH:  # sealed from the fields: no tuple made per row
            if self.sealed is None:
                self.sealed = []
            self.sealed.append(_Sealed.of(_split(newest)))
            self.newest = []
        # no mutate: at ``keep`` exactly, ``_drop(0)`` drops nothing (> and >= keep the same)
        if keep is not None and self.count > keep:  # pragma: no mutate
            self._drop(self.count - keep)

    def _drop(self, n: int) -> None:
        """Forget the ``n`` oldest checkpoints (a batch is dropped once all of it is)."""
        self.count -= n
        sealed = self.sealed or []
        while n and sealed:
            left = sealed[0].count - self.dropped
            # no mutate: with n == left, a batch kept wholly dropped reads as none, goes next
            if n < left:  # pragma: no mutate
                self.dropped += n
                return
            n -= left
            del sealed[0]
            self.dropped = 0
        del self.newest[: n * _WIDTH]

    def checkpoints(self) -> list[_Checkpoint]:
        """Every checkpoint, oldest first (sealed ones opened)."""
        opened: list[_Checkpoint] = []
        for batch in self.sealed or ():
            opened += batch.open()
        del opened[: self.dropped]
        return opened + _rows(self.newest)

    def replace(self, checkpoints: list[_Checkpoint]) -> None:
        """Hold ``checkpoints`` (oldest first) in batches again."""
        # no mutate: a short batch sealed at the end reads the same as the open rows
        sealed = len(checkpoints) - len(checkpoints) % _BATCH  # pragma: no mutate
        self.sealed = [
            _Sealed.of(checkpoints[start : start + _BATCH]) for start in range(0, sealed, _BATCH)
        ] or None
        self.newest = [item for checkpoint in checkpoints[sealed:] for item in checkpoint]
        self.dropped, self.count = 0, len(checkpoints)


class InMemoryCheckpointer(Checkpointer, ThreadLeases):
    """Threads and their leases in memory, with the same semantics as the durable backends."""

    def __init__(
        self,
        *,
        keep_checkpoints: int | None = None,
        media: MediaStore | MediaPolicy | None = None,
    ) -> None:
        """Create an empty store; ``keep_checkpoints`` keeps only the newest N per thread.

        ``media``: a media store (or ``MediaPolicy``) that large inline media
        move to on save (see ``tenxgraph.storage.media.offload``).
        """
        check_keep(keep_checkpoints)
        self._keep = keep_checkpoints
        self.media = media_policy(media)
        self._lock = threading.Lock()
        self._tenants: dict[str, dict[str, _Thread]] = {}
        self._leases: dict[tuple[str, str], _Lease] = {}
        """By (user_id, thread_id): a tuple of two strs hashes in C, a ``ThreadKey`` in Python."""

    def _get(self, key: ThreadKey) -> _Thread | None:
        tenant = self._tenants.get(key.user_id)
        return None if tenant is None else tenant.get(key.thread_id)

    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        """The thread's incarnation and version, without decoding anything."""
        with self._lock:
            thread = self._get(key)
            return None if thread is None else ThreadStamp(thread.incarnation, thread.version)

    async def aload(self, key: ThreadKey) -> StoredThread | None:
        """Load the state row and the window's messages."""
        with self._lock:
            thread = self._get(key)
            if thread is None:
                return None
            incarnation, version, log_length = thread.incarnation, thread.version, len(thread.log)
            values, window_text, metadata = thread.values, thread.window, thread.metadata
            window = decode_window(key, window_text, log_length)
            seqs, bodies = _window_rows(thread.log, window)
        return StoredThread(
            key=key,
            version=decode_version(key, version),
            log_length=log_length,
            values=decode_json_object(key, "values", values),
            window=window,
            context=decode_messages(key, seqs, bodies),
            metadata=decode_json_object(key, "metadata", metadata),
            incarnation=incarnation,
        )

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        """Append the new messages and replace the state row, if incarnation and version match."""
        offloaded = None  # pragma: no mutate (after_save of "" does nothing either)
        if self.media is not None:
            write, offloaded = await offload(self.media, key, write)
        # no mutate: the usage column (unused here) and str bodies would only cost more
        # pragma: no mutate start
        encoded = encode_write(key, write, usages=False, dump=compact_json_bytes)
        # pragma: no mutate end
        now = time.time()
        version, lease = write.expected_version + 1, write.lease
        with self._lock:
            self._check_lease(key, lease)  # the lease fences the write
            thread = self._get(key)
            if thread is None:  # compared in place: a stamp is made only to report a conflict
                if write.expected_version != 0:
                    # no mutate: with no stored thread, the incarnation is not read
                    raise conflict(key, write, encoded.incarnation, None)  # pragma: no mutate
                log_length = len(encoded.messages)
            elif (
                thread.version != write.expected_version
                or thread.incarnation != encoded.incarnation
            ):
                found = ThreadStamp(thread.incarnation, thread.version)
                raise conflict(key, write, encoded.incarnation, found)
            else:
                log_length = len(thread.log) + len(encoded.messages)
            check_window(key, write.window, log_length)
            values, window = encoded.values, encoded.window
            if thread is None:
                metadata = encoded.metadata or "{}"
                thread = _Thread(
                    encoded.incarnation, version, values, window, metadata, now, now, [], []
                )
                self._tenants.setdefault(key.user_id, {})[key.thread_id] = thread
            else:
                if encoded.metadata is not None:
                    thread.metadata = encoded.metadata
                thread.version = version
                thread.values, thread.window, thread.updated_at = values, window, now
            thread.log += map(_BODY, encoded.messages)
            checkpoint = (
                version,
                write.node,
                write.step,
                log_length,
                values,
                window,
                now,
                encoded.parent,
            )
            thread.add(checkpoint, self._keep)
            if write.release_lease and lease is not None:
                del self._leases[key.user_id, key.thread_id]  # held: checked above
        if offloaded is not None:
            await after_save(self.media, key, offloaded)
        return new_tuple(ThreadStamp, (thread.incarnation, version))

    async def arewind(
        self, key: ThreadKey, stamp: ThreadStamp, to_version: int, *, lease: str | None = None
    ) -> ThreadStamp | None:
        """Cut the log and checkpoints back to ``to_version``'s, as a new version (CAS)."""
        with self._lock:
            self._check_lease(key, lease)
            thread = self._get(key)
            found = None if thread is None else ThreadStamp(thread.incarnation, thread.version)
            if thread is None or found != stamp:
                raise rewind_conflict(key, stamp, found)
            if to_version == 0:
                del self._tenants[key.user_id][key.thread_id]
                return None
            checkpoints = thread.checkpoints()
            target = next((cp for cp in checkpoints if cp.version == to_version), None)
            if target is None:
                raise missing_checkpoint(key, to_version)
            while checkpoints and checkpoints[-1].version > to_version:
                checkpoints.pop()
            del thread.log[target.log_length :]
            thread.version += 1
            thread.values, thread.window = target.values, target.window
            thread.updated_at = time.time()
            checkpoints.append(
                _Checkpoint(
                    thread.version,
                    "__rollback__",
                    target.step,
                    target.log_length,
                    target.values,
                    target.window,
                    thread.updated_at,
                    to_version,
                )
            )
            thread.replace(checkpoints)
            return ThreadStamp(thread.incarnation, thread.version)

    async def atake_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Take the lease if it is free, expired or already ``owner``'s."""
        return (await self.atake_thread(key, owner, seconds))[0]

    async def atake_thread(
        self, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None]:
        """Take the lease and read the stamp under one lock."""
        now = time.monotonic()
        with self._lock:
            held = self._leases.get((key.user_id, key.thread_id))
            # no mutate: > and >= differ only at the lease's exact expiry instant
            # pragma: no mutate start
            if held is not None and held.owner != owner and held.expires_at >= now:
                # pragma: no mutate end
                return held.owner, None
            self._leases[key.user_id, key.thread_id] = _Lease(owner, now + seconds)
            thread = self._get(key)
            return None, None if thread is None else ThreadStamp(thread.incarnation, thread.version)

    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Extend ``owner``'s lease; return the stop request made of it, if any."""
        with self._lock:
            held = self._leases.get((key.user_id, key.thread_id))
            if held is None or held.owner != owner:
                raise lease_lost(key, owner)
            held.expires_at = time.monotonic() + seconds
            return held.stop

    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        """Drop the lease if ``owner`` still holds it."""
        with self._lock:
            held = self._leases.get((key.user_id, key.thread_id))
            if held is not None and held.owner == owner:
                del self._leases[key.user_id, key.thread_id]

    async def arequest_stop(
        self, key: ThreadKey, request: str, *, owner_prefix: str | None = None
    ) -> str | None:
        """Mark the unexpired lease (``owner_prefix``'s, if given) with ``request``; its owner."""
        check_stop_request(request)
        with self._lock:
            held = self._leases.get((key.user_id, key.thread_id))
            # no mutate: < and <= differ only at the lease's exact expiry instant
            if held is None or held.expires_at < time.monotonic():  # pragma: no mutate
                return None
            if owner_prefix is not None and not held.owner.startswith(owner_prefix):
                return None
            held.stop = request
            return held.owner

    def _check_lease(self, key: ThreadKey, owner: str | None) -> None:
        """Refuse a write fenced by a lease ``owner`` no longer holds (call under the lock)."""
        if owner is None:
            return
        held = self._leases.get((key.user_id, key.thread_id))
        if held is None or held.owner != owner:
            raise lease_lost(key, owner)

    async def alist_messages(
        self, key: ThreadKey, *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """The whole log in seq order, paginated; empty for an unknown thread."""
        check_page(offset, limit)
        with self._lock:
            thread = self._get(key)
            log = [] if thread is None else thread.log
            end = len(log) if limit is None else min(len(log), offset + limit)
            bodies = log[offset:end]
        seqs = range(offset, offset + len(bodies))
        messages = decode_messages(key, seqs, bodies)
        pairs = zip(seqs, messages, strict=True)  # pragma: no mutate (one seq a body)
        return [StoredMessage(seq, message) for seq, message in pairs]

    async def alist_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """The tenant's threads, most recently updated first, filtered by metadata containment.

        A damaged row is left out and logged (see ``_listing.list_threads``).
        """
        check_id("user_id", user_id)
        check_page(offset, limit)
        with self._lock:
            rows = [
                (thread_id, t.version, len(t.log), t.metadata, t.created_at, t.updated_at)
                for thread_id, t in self._tenants.get(user_id, {}).items()
            ]
        rows.sort(key=lambda row: (-row[5], row[0]))
        return list_threads(user_id, rows, metadata, offset, limit)

    async def athread_info(self, key: ThreadKey) -> ThreadInfo | None:
        """One thread's listing line, by its key."""
        with self._lock:
            t = self._get(key)
            if t is None:
                return None
            row = (key.thread_id, t.version, len(t.log), t.metadata, t.created_at, t.updated_at)
        found = list_threads(key.user_id, [row])
        return found[0] if found else None

    async def alist_tenants(self) -> dict[str, int]:
        """Each user_id holding threads, with how many."""
        with self._lock:
            return {
                user: len(threads) for user, threads in sorted(self._tenants.items()) if threads
            }

    async def adelete_thread(self, key: ThreadKey) -> bool:
        """Forget the thread, its log and its checkpoints (and media only it referenced)."""
        return await delete_with_media(self, self.media, key, self._delete)

    async def _delete(self, key: ThreadKey) -> bool:
        with self._lock:
            return self._tenants.get(key.user_id, {}).pop(key.thread_id, None) is not None

    async def alist_checkpoints(
        self, key: ThreadKey, *, limit: int | None = None
    ) -> Sequence[Checkpoint]:
        """The thread's checkpoints, newest first."""
        check_limit(limit)
        with self._lock:
            held = _held(self._get(key))
        return [
            decode_checkpoint(
                key,
                cp.version,
                cp.node,
                cp.step,
                cp.log_length,
                cp.values,
                cp.window,
                cp.created_at,
                cp.parent,
            )
            for cp in islice(_newest_first(*held), limit)
        ]

    async def aget_checkpoint(self, key: ThreadKey, version: int) -> Checkpoint | None:
        """Checkpoint ``version``, opening only the sealed batch that holds it."""
        with self._lock:
            held = _held(self._get(key))
        found = next((cp for cp in _newest_first(*held) if cp.version == version), None)
        return None if found is None else decode_checkpoint(key, *found)

    async def aload_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        """The log messages of ``window``, in window order."""
        with self._lock:
            thread = self._get(key)
            if thread is None:
                raise thread_not_found(key)
            check_window(key, window, len(thread.log))
            seqs, bodies = _window_rows(thread.log, window)
        return decode_messages(key, seqs, bodies)


def _held(thread: _Thread | None) -> tuple[tuple[_Sealed, ...], int, list[_Checkpoint]]:
    """A thread's checkpoints as ``_newest_first`` takes them (call under the lock)."""
    if thread is None:
        return (), 0, []  # pragma: no mutate (no sealed batch: ``dropped`` is not read)
    return tuple(thread.sealed or ()), thread.dropped, _rows(thread.newest)


def _newest_first(
    sealed: tuple[_Sealed, ...], dropped: int, newest: list[_Checkpoint]
) -> Iterator[_Checkpoint]:
    """Checkpoints newest first, each sealed batch opened only when it is reached."""
    yield from reversed(newest)
    for index in range(len(sealed) - 1, -1, -1):
        opened = sealed[index].open()
        yield from reversed(opened[dropped:] if index == 0 else opened)


_BODY = attrgetter("body")
"""A ``MessageRow``'s body: the message's JSON bytes (``compact_json_bytes``)."""


def _window_rows(log: list[bytes], window: Window) -> tuple[list[int], list[bytes]]:
    seqs: list[int] = []
    bodies: list[bytes] = []
    for start, end in window:
        seqs.extend(range(start, end))
        bodies.extend(log[start:end])
    return seqs, bodies
