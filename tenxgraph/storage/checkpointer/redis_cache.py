"""``RedisThreadCache``: a hot copy of loaded threads in Redis, in front of Postgres.

An entry is a Redis hash holding one thread's state row and the JSON of its
context messages, tagged with the thread's version and creation time. The
cache is never trusted alone: ``PgCheckpointer`` serves an entry only when
Postgres reports the same version and creation time for the thread (one
cheap indexed read, sent alongside the Redis read), so a stale or lost
update can cost a miss but never a wrong answer. Writes update the entry
after the Postgres commit; conflicts and deletes evict it.

Redis failures are logged and treated as misses: Postgres stays the source
of truth and keeps working without its cache.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from tenxgraph.errors import MissingExtraError, StorageError
from tenxgraph.storage.checkpointer._codec import EncodedWrite, decode_window, window_seqs
from tenxgraph.storage.checkpointer.base import ThreadKey, ThreadWrite

__all__ = ["CachedThread", "RedisThreadCache"]

logger = logging.getLogger(__name__)

_SEPARATOR = b"\x00"
"""Joins message bodies: a NUL byte never occurs in JSON text."""


@dataclass(frozen=True, slots=True)
class CachedThread:
    """A thread's state row and context as stored JSON text, for one version."""

    version: int
    created_at: float
    """With ``version``, identifies the thread's state: a re-created thread restarts at 1."""
    log_length: int
    values: bytes
    window: bytes
    metadata: bytes
    bodies: list[bytes]
    """The JSON of the window's messages, in window order."""


class RedisThreadCache:
    """Thread entries in Redis under ``prefix``, expiring after ``ttl`` seconds unused."""

    def __init__(self, redis: Any, *, prefix: str = "tenxgraph:", ttl: int | None = 86_400) -> None:
        """Use a ``redis.asyncio.Redis`` client or a ``redis://`` URL (then owned and closed)."""
        try:
            from redis.asyncio import Redis
            from redis.exceptions import RedisError
        except ImportError:
            raise MissingExtraError("redis", "redis") from None
        self._owned = isinstance(redis, str)
        self._client: Any = Redis.from_url(redis) if isinstance(redis, str) else redis
        self._errors: tuple[type[BaseException], ...] = (RedisError, OSError)
        self.prefix = prefix
        self.ttl = ttl

    def key(self, key: ThreadKey) -> str:
        """The Redis key of a thread; the user id's length keeps any two keys apart."""
        return f"{self.prefix}thread:{len(key.user_id)}:{key.user_id}:{key.thread_id}"

    async def get(self, key: ThreadKey) -> CachedThread | None:
        """The cached entry, or None on a miss, a malformed entry or a Redis failure."""
        try:
            fields: dict[bytes, bytes] = await self._client.hgetall(self.key(key))
        except self._errors as exc:
            logger.warning("redis cache read failed, using Postgres: %s", exc)
            return None
        if not fields:
            return None
        try:
            context = fields[b"context"]
            return CachedThread(
                version=int(fields[b"version"]),
                created_at=float(fields[b"created_at"]),
                log_length=int(fields[b"log_length"]),
                values=fields[b"values"],
                window=fields[b"window"],
                metadata=fields[b"metadata"],
                bodies=context.split(_SEPARATOR) if context else [],
            )
        except (KeyError, ValueError):
            logger.warning("malformed redis cache entry %r, evicting it", self.key(key))
            await self.evict(key)
            return None

    async def put(self, key: ThreadKey, entry: CachedThread) -> None:
        """Store ``entry``, replacing whatever the key held."""
        name = self.key(key)
        mapping = {
            "version": entry.version,
            "created_at": repr(entry.created_at),
            "log_length": entry.log_length,
            "values": entry.values,
            "window": entry.window,
            "metadata": entry.metadata,
            "context": _SEPARATOR.join(entry.bodies),
        }
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(name)
                pipe.hset(name, mapping=mapping)
                if self.ttl is not None:
                    pipe.expire(name, self.ttl)
                await pipe.execute()
        except self._errors as exc:
            logger.warning("redis cache write failed for %r: %s", name, exc)

    async def after_save(
        self,
        key: ThreadKey,
        write: ThreadWrite,
        encoded: EncodedWrite,
        base: int,
        created_at: float,
    ) -> None:
        """Follow a committed save: build the new entry from the previous one, or evict.

        The new context is the previous entry's context plus the new
        messages, picked by the new window; when the previous entry is not
        the version this save replaced, or the window reaches messages it
        does not hold, the entry is dropped and the next load refills it.
        """
        new_bodies = {base + index: row.body.encode() for index, row in enumerate(encoded.messages)}
        metadata = None if encoded.metadata is None else encoded.metadata.encode()
        known: dict[int, bytes] = {}
        if write.expected_version > 0:
            old = await self.get(key)
            if old is None or (old.version, old.created_at) != (write.expected_version, created_at):
                await self.evict(key)
                return
            try:
                old_seqs = window_seqs(decode_window(key, old.window))
                known.update(zip(old_seqs, old.bodies, strict=True))
            except (StorageError, ValueError):
                await self.evict(key)
                return
            metadata = metadata or old.metadata
        known.update(new_bodies)
        try:
            bodies = [known[seq] for seq in window_seqs(write.window)]
        except KeyError:
            await self.evict(key)
            return
        entry = CachedThread(
            version=write.expected_version + 1,
            created_at=created_at,
            log_length=base + len(new_bodies),
            values=encoded.values.encode(),
            window=encoded.window.encode(),
            metadata=metadata or b"{}",
            bodies=bodies,
        )
        await self.put(key, entry)

    async def evict(self, key: ThreadKey) -> None:
        """Drop a thread's entry (after a conflict, a delete or a write it cannot follow)."""
        try:
            await self._client.delete(self.key(key))
        except self._errors as exc:
            logger.warning("redis cache eviction failed for %r: %s", self.key(key), exc)

    async def aclose(self) -> None:
        """Close the client if this cache created it from a URL."""
        if self._owned:
            await self._client.aclose()
