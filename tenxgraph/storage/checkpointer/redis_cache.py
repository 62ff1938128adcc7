"""``RedisThreadCache``: a hot copy of loaded threads in Redis, in front of Postgres.

An entry is two keys per thread: a hash holding the state row (incarnation,
version, log length, values, window, metadata) and a list holding the
JSON of the context messages in window order. Both always change together,
and are read together, each time in one Lua script (``_WRITE``, ``_READ``):
atomic in Redis, and one command for the client to send and parse (a
MULTI/EXEC pipeline is four, and cost a worker as much CPU as the save).

The cache is never trusted alone: ``PgCheckpointer`` serves an entry only
when Postgres reports the same incarnation and version for the thread (a
cheap indexed read sent alongside the Redis read), so a stale or lost update,
or the entry of a thread since deleted and re-created to the same version,
can cost a miss but never a wrong answer. After a committed save the
entry follows incrementally when the save only appended to the context
(a script that checks the version and writes, atomic in Redis: a
compare-and-swap too); any other change evicts it and the next load
refills it. Conflicts and deletes evict. The follows of a lease holder's
saves are held back up to ``linger`` seconds and sent as one (a run saves
at each step, a round trip each, and the entry serves the next holder): a
save without a lease, or one giving it up, sends what is held at once. A
follow never replaces an entry of a later version, so a late one costs no
other process its entry.

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

LINGER = 1.0
"""Seconds a lease holder's saves may leave their entry behind Postgres (``RedisThreadCache``)."""


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


@dataclass(frozen=True, slots=True)
class _Follow:
    """Saves not followed in Redis yet: each appended to the one before (one follow for all)."""

    replaced: int
    """The version the entry must hold for this follow to apply."""
    incarnation: str
    base: int
    """The log length before the first of the saves."""
    bodies: list[bytes]
    """Their messages' JSON, in log order."""
    header: dict[str, Any]
    """The last save's state row fields (``version`` first)."""
    window: Window

    def then(self, later: _Follow) -> _Follow | None:
        """One follow for both (``later`` after this); None when ``later`` does not continue it."""
        if (later.replaced, later.incarnation, later.base) != (
            self.header["version"],
            self.incarnation,
            self.base + len(self.bodies),
        ):
            return None
        header = {**self.header, **later.header}  # the metadata stays if only an earlier changed it
        bodies = self.bodies + later.bodies
        return _Follow(self.replaced, self.incarnation, self.base, bodies, header, later.window)


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
            from redis.exceptions import RedisError
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
        self.prefix = prefix
        self.ttl = ttl
        self.timeout = timeout
        self.cooldown = cooldown
        self._skip_until = 0.0
        self._failing = False
        self.linger = LINGER
        """Seconds a lease holder's save may wait to be followed (0: each follows at once)."""
        self._held: dict[ThreadKey, _Follow] = {}
        self._due: asyncio.TimerHandle | None = None
        """When the held follows go (``_send_held``): a timer, not a sleeping task, so a loop
        with nothing held has no task left to wait for when it closes (a sync call's)."""
        self._sending: asyncio.Task[None] | None = None
        self._write_script: Any = self._client.register_script(_WRITE)
        self._read_script: Any = self._client.register_script(_READ)

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
        done, found = await self._call("read", lambda: self._read_script(keys=[state, context]))
        if not done or not found:  # none, or written by a tenxgraph before incarnations: a
            return None  # miss (the load that follows replaces it)
        try:
            incarnation, version, log_length, values, window, metadata, *bodies = found
            return CachedThread(
                version=int(version),
                incarnation=incarnation.decode(),
                log_length=int(log_length),
                values=bytes(values),
                window=bytes(window),
                metadata=bytes(metadata),
                bodies=bodies,
            )
        except (TypeError, ValueError, AttributeError):
            logger.warning("malformed redis cache entry %r, evicting it", state)
            await self.evict(key)
            return None

    async def put(self, key: ThreadKey, entry: CachedThread) -> None:
        """Store ``entry``, replacing whatever the keys held."""
        header = {
            "version": entry.version,
            "incarnation": entry.incarnation,
            "log_length": entry.log_length,
            "values": entry.values,
            "window": entry.window,
            "metadata": entry.metadata,
        }
        await self._write("write", key, [""] * 6, header, entry.bodies)

    async def after_save(
        self,
        key: ThreadKey,
        write: ThreadWrite,
        encoded: EncodedWrite,
        base: int,
    ) -> None:
        """Follow a committed save: append to the entry it extends, else evict.

        The entry follows only if it holds exactly the incarnation and version
        this save replaced and the new window is the old one plus the new
        messages; a trim or summary evicts it instead. A new thread's entry
        replaces whatever the keys held (a deleted thread's may linger). A
        save under a lease it keeps is held back (``linger``), joined to the
        thread's held saves it continues.
        """
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
        held = self._held.pop(key, None)
        if write.expected_version == 0:
            header.setdefault("metadata", "{}")
            bodies = [new_bodies[seq] for seq in window_seqs(write.window)]
            await self._write("write", key, [""] * 6, header, bodies)
            return
        follow = _Follow(
            write.expected_version, encoded.incarnation, base, new_bodies, header, write.window
        )
        joined = None if held is None else held.then(follow)
        if held is not None and joined is None:
            await self._follow(key, held)
        follow = joined or follow
        if write.lease is not None and not write.release_lease and self.linger > 0:
            self._held[key] = follow
            if self._due is None:
                self._due = asyncio.get_running_loop().call_later(self.linger, self._send_held)
            return
        await self._follow(key, follow)

    async def _follow(self, key: ThreadKey, follow: _Follow) -> None:
        await self._send({key: follow})

    async def _send(self, held: dict[ThreadKey, _Follow]) -> None:
        """Run ``_WRITE`` for each follow: one command, or one pipeline (one round trip)."""
        calls = []
        for key, follow in held.items():
            replaced = [follow.replaced, follow.incarnation, follow.base, len(follow.bodies)]
            replaced += [_flat(follow.window), follow.header["version"]]
            args = _args(replaced, self.ttl, follow.header, follow.bodies)
            calls.append((list(self.keys(key)), args))
        if len(calls) == 1:
            keys, args = calls[0]
            await self._call("update", lambda: self._write_script(keys=keys, args=args))
            return

        async def pipelined() -> None:
            pipe = self._client.pipeline(transaction=False)
            for keys, args in calls:
                await self._write_script(keys=keys, args=args, client=pipe)
            await pipe.execute()

        await self._call("update", pipelined)

    async def settle(self, key: ThreadKey) -> None:
        """Send the thread's held follow now, if any (a load of it reads the entry next)."""
        held = self._held.pop(key, None)
        if held is not None:
            await self._follow(key, held)

    def _send_held(self) -> None:
        self._due = None
        if self._held:
            self._sending = asyncio.get_running_loop().create_task(self.flush())

    async def flush(self) -> None:
        """Send the follows held back (``linger``), all in one pipeline."""
        held, self._held = self._held, {}
        if held:
            await self._send(held)

    async def _write(
        self,
        action: str,
        key: ThreadKey,
        follows: list[Any],
        header: dict[str, Any],
        bodies: list[bytes],
    ) -> None:
        """Run ``_WRITE``: one command, atomic in Redis (``follows``: its first six arguments)."""
        args = _args(follows, self.ttl, header, bodies)
        await self._call(action, lambda: self._write_script(keys=list(self.keys(key)), args=args))

    async def evict(self, key: ThreadKey) -> None:
        """Drop a thread's entry (after a conflict, a delete or a change it cannot follow)."""
        self._held.pop(key, None)
        await self._call("eviction", lambda: self._client.delete(*self.keys(key)))

    async def aclose(self) -> None:
        """Send the follows held back; close the client if this cache created it from a URL."""
        due, self._due = self._due, None
        if due is not None:
            due.cancel()
        task, self._sending = self._sending, None
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.wait([task])
        await self.flush()
        if self.owns_client:
            await self._client.aclose()


_WRITE = """
if ARGV[1] == '' then
    redis.call('DEL', KEYS[1], KEYS[2])
else
    local cur = redis.call('HMGET', KEYS[1], 'version', 'incarnation', 'window')
    if cur[2] == ARGV[2] and (tonumber(cur[1]) or -1) >= tonumber(ARGV[6]) then
        return 0
    end
    local fits = cur[1] == ARGV[1] and cur[2] == ARGV[2]
    if fits then
        local ok, old = pcall(cjson.decode, cur[3])
        fits = ok and type(old) == 'table'
        if fits then
            local merged = {}
            local function add(s, e)
                if s == e then return end
                local n = #merged
                if n > 0 and merged[n][2] == s then merged[n][2] = e else merged[n + 1] = {s, e} end
            end
            for _, pair in ipairs(old) do
                if type(pair) ~= 'table' or type(pair[1]) ~= 'number'
                        or type(pair[2]) ~= 'number' then
                    fits = false
                    break
                end
                add(pair[1], pair[2])
            end
            local base = tonumber(ARGV[3])
            add(base, base + tonumber(ARGV[4]))
            local parts = {}
            for i, pair in ipairs(merged) do parts[i] = string.format('%d,%d', pair[1], pair[2]) end
            fits = fits and table.concat(parts, ';') == ARGV[5]
        end
    end
    if not fits then
        redis.call('DEL', KEYS[1], KEYS[2])
        return 0
    end
end
local header_end = 8 + tonumber(ARGV[8])
redis.call('HSET', KEYS[1], unpack(ARGV, 9, header_end))
for first = header_end + 1, #ARGV, 1000 do
    redis.call('RPUSH', KEYS[2], unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
local ttl = tonumber(ARGV[7])
if ttl > 0 then
    redis.call('EXPIRE', KEYS[1], ttl)
    redis.call('EXPIRE', KEYS[2], ttl)
end
return 1
"""
"""An entry's write, in Redis: the header fields (``ARGV[8]`` values from ``ARGV[9]``) set
and the bodies (the rest) appended, the ``ARGV[7]`` s expiry renewed (0: none). With
``ARGV[1]`` empty, the entry is replaced. Otherwise it follows saves: only when it holds the
replaced version and incarnation (``ARGV[1]``, ``ARGV[2]``) and its window followed by the
saves' messages (``ARGV[3]`` on, ``ARGV[4]`` of them) covers the seqs of the new window
(``ARGV[5]``, as ``_flat`` spells it); else it is dropped, unless it holds version ``ARGV[6]``
(the new one) or a later one of that incarnation already: then it is left as it is."""

_READ = """
local head = redis.call('HMGET', KEYS[1], 'incarnation', 'version', 'log_length', 'values',
    'window', 'metadata')
if not head[1] then return {} end
for i, body in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do head[6 + i] = body end
return head
"""
"""An entry as one list: incarnation, version, log length, values, window, metadata, then the
bodies (empty: no entry, or one written before incarnations)."""


def _args(
    follows: list[Any], ttl: int | None, header: dict[str, Any], bodies: list[bytes]
) -> list[Any]:
    """``_WRITE``'s arguments: ``follows`` (six), the expiry, the header fields, the bodies."""
    fields = [part for pair in header.items() for part in pair]
    return [*follows, ttl or 0, len(fields), *fields, *bodies]


def _flat(window: Window) -> str:
    """The window's seqs as ``_WRITE`` spells them: empty ranges dropped, touching ones joined.

    ``"1,4;6,8"`` for ``[(1, 3), (3, 4), (6, 8)]``.
    """
    merged: list[list[int]] = []
    for start, end in window:
        if start == end:
            continue
        if merged and merged[-1][1] == start:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return ";".join(f"{start},{end}" for start, end in merged)
