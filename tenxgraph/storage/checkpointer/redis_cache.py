"""``RedisThreadCache``: a hot copy of loaded threads in Redis, in front of Postgres.

An entry is two keys per thread: a hash holding the state row (incarnation,
version, log length, values, window, metadata) and a list holding the
JSON of the context messages in window order. Both always change together,
inside one MULTI/EXEC.

The cache is never trusted alone: ``PgCheckpointer`` serves an entry only
when Postgres reports the same incarnation and version for the thread (a
cheap indexed read sent alongside the Redis read), so a stale or lost update,
or the entry of a thread since deleted and re-created to the same version,
can cost a miss but never a wrong answer. After a committed save the
entry follows incrementally when the save only appended to the context
(WATCH on the hash makes that a compare-and-swap too); any other change
evicts it and the next load refills it. Conflicts and deletes evict.

Redis failures are treated as misses: Postgres stays the source of truth
and keeps working without its cache. Every Redis operation is bounded by
``timeout`` (0.5 s by default; a client made from a URL also gets it as its
socket timeouts, with no retries). After a failure the cache is skipped for
``cooldown`` seconds (30 by default), so a hung or dead Redis costs one
timeout, not one per call; the next operation after the cool-down tries
again. An outage is logged once: a warning when Redis fails, an info line
when it answers again. Entries written before or during an outage may be
stale when it ends; the version check above is what keeps them from being
served, so no flush is needed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ConfigError, MissingExtraError, StorageError
from tenxgraph.storage.checkpointer._codec import (
    EncodedWrite,
    decode_json_object,
    decode_messages,
    decode_window,
    window_seqs,
    window_size,
)
from tenxgraph.storage.checkpointer.base import StoredThread, ThreadStamp, ThreadWrite, Window

__all__ = ["CachedThread", "RedisThreadCache"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CachedThread:
    """A thread's state row and context as stored JSON text, for one version."""

    version: int
    incarnation: str
    """With ``version``, identifies the thread's state: a re-created thread restarts at
    version 1 with a new incarnation."""
    log_length: int
    values: bytes
    window: bytes
    metadata: bytes
    bodies: list[bytes]
    """The JSON of the window's messages, in window order."""

    @property
    def stamp(self) -> ThreadStamp:
        """The incarnation and version this entry holds."""
        return ThreadStamp(self.incarnation, self.version)

    def decode(self, key: ThreadKey) -> StoredThread | None:
        """The thread this entry holds; None (a miss) if it does not decode."""
        try:
            window = decode_window(key, self.window, self.log_length)
            if len(self.bodies) != window_size(window):
                return None
            return StoredThread(
                key=key,
                version=self.version,
                log_length=self.log_length,
                values=decode_json_object(key, "values", self.values),
                window=window,
                context=decode_messages(key, window_seqs(window), self.bodies),
                metadata=decode_json_object(key, "metadata", self.metadata),
                incarnation=self.incarnation,
            )
        except (StorageError, ValueError):
            return None


class RedisThreadCache:
    """Thread entries in Redis under ``prefix``, expiring ``ttl`` seconds after their last write."""

    def __init__(
        self,
        redis: Any,
        *,
        prefix: str = "tenxgraph:",
        ttl: int | None = 86_400,
        timeout: float = 0.5,
        cooldown: float = 30.0,
    ) -> None:
        """Use a ``redis.asyncio.Redis`` client or a ``redis://`` URL (then owned and closed).

        ``timeout`` bounds each Redis operation (seconds); after a failure
        the cache is skipped for ``cooldown`` seconds.
        """
        try:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
            from redis.exceptions import RedisError, WatchError
        except ImportError:
            raise MissingExtraError("redis", "redis") from None
        if not timeout > 0 or cooldown < 0:
            raise ConfigError(f"need timeout > 0 and cooldown >= 0, got {timeout} and {cooldown}")
        self.owns_client = isinstance(redis, str)
        """True when the client was made here from a URL (and is closed by ``aclose``)."""
        self._client: Any = (
            Redis.from_url(
                redis,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
            )
            if isinstance(redis, str)
            else redis
        )
        self._errors: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
        self._watch_error: type[BaseException] = WatchError
        self.prefix = prefix
        self.ttl = ttl
        self.timeout = timeout
        self.cooldown = cooldown
        self._skip_until = 0.0
        self._failing = False

    @property
    def available(self) -> bool:
        """False during the cool-down after a failure: callers skip the cache meanwhile."""
        return time.monotonic() >= self._skip_until

    async def _call(
        self, action: str, operation: Callable[[], Coroutine[Any, Any, T]]
    ) -> tuple[bool, T | None]:
        """Run one Redis operation within ``timeout``: (True, result), or (False, None) if skipped.

        A failure starts the cool-down; the first failure of an outage and the
        first success after it are logged.
        """
        if not self.available:
            return False, None
        try:
            async with asyncio.timeout(self.timeout):
                result = await operation()
        except self._errors as exc:
            self._skip_until = time.monotonic() + self.cooldown
            if not self._failing:
                self._failing = True
                reason = str(exc) or f"no answer within {self.timeout:g}s"
                logger.warning(
                    "redis cache %s failed (%s); using Postgres alone, retrying in %gs",
                    action,
                    reason,
                    self.cooldown,
                )
            return False, None
        if self._failing:
            self._failing = False
            logger.info("redis cache is available again")
        return True, result

    def keys(self, key: ThreadKey) -> tuple[str, str]:
        """The thread's state hash and context list; the user id's length keeps keys apart."""
        name = f"{len(key.user_id)}:{key.user_id}:{key.thread_id}"
        return f"{self.prefix}state:{name}", f"{self.prefix}context:{name}"

    async def get(self, key: ThreadKey) -> CachedThread | None:
        """The cached entry, or None on a miss, a malformed entry or a Redis failure."""
        state, context = self.keys(key)

        async def read() -> list[Any]:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hgetall(state)
                pipe.lrange(context, 0, -1)
                return list(await pipe.execute())

        done, result = await self._call("read", read)
        if not done or result is None:
            return None
        fields, bodies = result
        if b"incarnation" not in fields:  # none, or written by a tenxgraph before incarnations
            return None  # a miss: the load that follows replaces it
        try:
            return CachedThread(
                version=int(fields[b"version"]),
                incarnation=fields[b"incarnation"].decode(),
                log_length=int(fields[b"log_length"]),
                values=fields[b"values"],
                window=fields[b"window"],
                metadata=fields[b"metadata"],
                bodies=bodies,
            )
        except (KeyError, ValueError):
            logger.warning("malformed redis cache entry %r, evicting it", state)
            await self.evict(key)
            return None

    async def put(self, key: ThreadKey, entry: CachedThread) -> None:
        """Store ``entry``, replacing whatever the keys held."""
        state, context = self.keys(key)
        header = {
            "version": entry.version,
            "incarnation": entry.incarnation,
            "log_length": entry.log_length,
            "values": entry.values,
            "window": entry.window,
            "metadata": entry.metadata,
        }

        async def write() -> None:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(state, context)
                self._queue_write(pipe, key, header, entry.bodies)
                await pipe.execute()

        await self._call("write", write)

    async def after_save(
        self,
        key: ThreadKey,
        write: ThreadWrite,
        encoded: EncodedWrite,
        base: int,
    ) -> None:
        """Follow a committed save: append to the entry it extends, else evict.

        The entry follows only if it holds exactly the incarnation and version
        this save replaced (checked under WATCH) and the new window is the old
        one plus the new messages; a trim or summary evicts it instead.
        """
        state, _ = self.keys(key)
        new_bodies = [row.body.encode() for row in encoded.messages]
        header: dict[str, Any] = {
            "version": write.expected_version + 1,
            "incarnation": encoded.incarnation,
            "log_length": base + len(new_bodies),
            "values": encoded.values,
            "window": encoded.window,
        }
        if encoded.metadata is not None:
            header["metadata"] = encoded.metadata

        async def follow() -> bool:
            """Apply the save to the entry; True if it must be evicted instead."""
            async with self._client.pipeline(transaction=True) as pipe:
                if write.expected_version == 0:
                    header.setdefault("metadata", "{}")
                    pipe.multi()
                    pipe.delete(*self.keys(key))  # a deleted thread's entry may linger
                    self._queue_write(
                        pipe, key, header, [new_bodies[seq] for seq in window_seqs(write.window)]
                    )
                    await pipe.execute()
                    return False
                await pipe.watch(state)
                version, incarnation, window = await pipe.hmget(
                    state, ["version", "incarnation", "window"]
                )
                expected = (str(write.expected_version).encode(), encoded.incarnation.encode())
                if (version, incarnation) != expected or not _appends(
                    key, window, write.window, base, len(new_bodies)
                ):
                    await pipe.unwatch()
                    return True
                pipe.multi()
                self._queue_write(pipe, key, header, new_bodies)
                try:
                    await pipe.execute()
                except self._watch_error:
                    return True  # another writer touched the entry meanwhile
                return False

        done, stale = await self._call("update", follow)
        if done and stale:
            await self.evict(key)

    def _queue_write(
        self, pipe: Any, key: ThreadKey, header: dict[str, Any], bodies: list[bytes]
    ) -> None:
        state, context = self.keys(key)
        pipe.hset(state, mapping=header)
        if bodies:
            pipe.rpush(context, *bodies)
        if self.ttl is not None:
            pipe.expire(state, self.ttl)
            pipe.expire(context, self.ttl)

    async def evict(self, key: ThreadKey) -> None:
        """Drop a thread's entry (after a conflict, a delete or a change it cannot follow)."""
        await self._call("eviction", lambda: self._client.delete(*self.keys(key)))

    async def aclose(self) -> None:
        """Close the client if this cache created it from a URL."""
        if self.owns_client:
            await self._client.aclose()


def _appends(key: ThreadKey, old: bytes | None, new: Window, base: int, added: int) -> bool:
    """True if window ``new`` is window ``old`` followed by the ``added`` messages from ``base``."""
    if old is None:
        return False
    try:
        previous = decode_window(key, old)
    except StorageError:
        return False
    return _merged(new) == _merged([*previous, (base, base + added)])


def _merged(window: Window) -> Window:
    """The same seqs with empty ranges dropped and touching ranges joined."""
    merged: Window = []
    for start, end in window:
        if start == end:
            continue
        if merged and merged[-1][1] == start:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged
