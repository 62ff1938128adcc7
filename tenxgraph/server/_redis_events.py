"""Run streams across workers: each run's events also go to a Redis Stream, numbered as on SSE.

The worker running a run writes its events to the run's ``EventLog`` as a
single worker does (its own readers follow that log in memory), and a
background task copies them, in order and in batches (one pipeline per
batch), to the Redis Stream ``<prefix><run_id>`` with the entry id ``0-N``
for event number ``N``. So an SSE ``id`` *is* a Redis entry id: a client
that reconnects to any worker with ``Last-Event-ID: N`` is answered from
``XREAD ... 0-N`` there, every later event once, in order.

A run resumed by another worker after its first worker died goes on
numbering after the last entry in the stream (``last_event_id``), so readers
following it see the new attempt's events after the old ones, never a
number twice.

Bounds: each stream is trimmed to about ``max_events`` entries
(``XADD MAXLEN ~``) and expires ``ttl_seconds`` after its run ended. A
reader resuming before the oldest entry kept gets ``EventsLostError``, as
with the in-memory log. Redis is the transport of followers on other
workers, not the record: the run's outcome is in Postgres and the thread's
state has everything the events said, so a Redis outage only costs those
followers their live events (logged once per run).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from tenxgraph.errors import EventsLostError, StateError
from tenxgraph.server._event_log import EventLog, EventLogLimits, Heartbeat, LoggedEvent

__all__ = ["RedisEvents", "RedisStreamReader", "RedisStreamWriter"]

logger = logging.getLogger("tenxgraph.server.runs")

BLOCK_MS = 1000
"""How long one ``XREAD BLOCK`` waits before a follower checks whether the run ended."""


def _number(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[1])


def _event(entry_id: bytes | str, fields: dict[Any, Any]) -> LoggedEvent:
    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    return LoggedEvent(_number(entry_id), text(fields[b"e"]), text(fields[b"d"]))


class RedisEvents:
    """The Redis client and settings the run streams of one server share."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "tenxgraph:runs:",
        ttl_seconds: int = 86_400,
        timeout: float = 5.0,
    ) -> None:
        """Connect to ``url`` (lazily); keys start with ``prefix``."""
        import redis.asyncio as aioredis

        self.prefix, self.ttl_seconds = prefix, ttl_seconds
        self.client: Any = aioredis.Redis.from_url(
            url, socket_timeout=timeout + BLOCK_MS / 1000, socket_connect_timeout=timeout
        )

    def key(self, run_id: str) -> str:
        """The stream of run ``run_id``."""
        return f"{self.prefix}{run_id}"

    async def last_event_id(self, run_id: str) -> int:
        """The number of the run's latest event in Redis (0: none)."""
        entries = await self.client.xrevrange(self.key(run_id), count=1)
        return _number(entries[0][0]) if entries else 0

    async def ping(self) -> None:
        """One round trip (readiness)."""
        await self.client.ping()

    async def aclose(self) -> None:
        """Close the connections."""
        await self.client.aclose()


class RedisStreamWriter(EventLog):
    """The running worker's log: each event goes to the run's Redis Stream, then into memory.

    Readers on this worker (the in-memory log) only see events already in
    Redis, so a client that reconnects elsewhere never holds an event number
    Redis did not get, even when this worker dies a moment later.
    """

    def __init__(
        self,
        events: RedisEvents,
        run_id: str,
        limits: EventLogLimits | None = None,
        *,
        start_after: int = 0,
    ) -> None:
        """Number events after ``start_after`` (the last one an earlier attempt published)."""
        super().__init__(limits)
        self._redis, self._key = events, events.key(run_id)
        self._last = self._next = self._start_after = start_after
        self._pending: list[LoggedEvent] = []
        self._flusher: asyncio.Task[None] | None = None
        self._ending = False
        self._failed = False
        self.hand_back = False
        """Set when this worker gives the run up unfinished: its ``end`` stays local, so
        followers elsewhere go on with the next attempt's events."""

    @property
    def closed(self) -> bool:
        """True once the run sent its last event (it may still be on its way to Redis)."""
        return self._ending

    def append(self, event: str, data: str) -> LoggedEvent:
        """Number the event and queue it: Redis first, then this worker's readers."""
        if self._ending:
            raise StateError(f"the run's stream has ended; cannot add event {event!r}")
        self._next += 1
        logged = LoggedEvent(self._next, event, data)
        self._pending.append(logged)
        self._kick()
        return logged

    def close(self) -> None:
        """End the log once what is queued was published."""
        if not self._ending:
            self._ending = True
            self._kick()

    def _kick(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def flushed(self) -> None:
        """Wait until every event appended so far is in Redis (or given up on) and here."""
        while self._flusher is not None and not self._flusher.done():
            await self._flusher

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # gather what the run adds in this turn of the loop
        while self._pending:
            batch, self._pending = self._pending, []
            published = [e for e in batch if not (self.hand_back and e.event == "end")]
            if published and not self._failed:
                try:
                    await self._write(published)
                except Exception as exc:  # followers elsewhere lose live events; the run goes on
                    logger.warning("run stream %s: Redis write failed: %s", self._key, exc)
                    self._failed = True
            for logged in batch:
                super().append(logged.event, logged.data)
        if self._ending:
            super().close()

    async def _write(self, batch: list[LoggedEvent]) -> None:
        pipe = self._redis.client.pipeline(transaction=False)
        for logged in batch:
            pipe.xadd(
                self._key,
                {"e": logged.event, "d": logged.data},
                id=f"0-{logged.id}",
                maxlen=self.limits.max_events,
                approximate=True,
            )
        pipe.expire(self._key, self._redis.ttl_seconds)
        await pipe.execute()

    async def follow(
        self, after: int = 0, *, heartbeat: float | None = None
    ) -> AsyncIterator[list[LoggedEvent]]:
        """As ``EventLog.follow``; events of earlier attempts come from Redis first."""
        if after < self._start_after:
            reader = RedisStreamReader(self._redis, self._key)
            async for batch in reader.read_range(after, self._start_after):
                yield batch
            after = self._start_after
        async for batch in super().follow(after, heartbeat=heartbeat):
            yield batch

    def check_resume(self, after: int) -> None:
        """As ``EventLog.check_resume``; ``follow`` checks resumes into an earlier attempt."""
        if after >= self._start_after:
            super().check_resume(after)


class RedisStreamReader(EventLog):
    """A follower on another worker: reads the run's Redis Stream, live, until its ``end``."""

    def __init__(
        self,
        events: RedisEvents,
        key: str,
        *,
        ended: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        """Read ``key``; ``ended()`` is asked when the stream is quiet.

        It tells whether the run ended: a run cancelled before it started has
        no ``end`` event.
        """
        super().__init__()
        self._redis, self._key, self._ended = events, key, ended
        self._first = 1

    async def prepare(self) -> None:
        """Read the oldest entry kept, so ``check_resume`` can answer without a round trip."""
        first = await self._redis.client.xrange(self._key, count=1)
        newest = await self._redis.client.xrevrange(self._key, count=1)
        self._first = _number(first[0][0]) if first else 1
        self._last = _number(newest[0][0]) if newest else 0

    @property
    def first_kept(self) -> int:
        """The oldest entry kept (as of ``prepare``)."""
        return self._first

    async def read_range(self, after: int, until: int) -> AsyncIterator[list[LoggedEvent]]:
        """The events numbered ``after + 1`` to ``until``, checked for a gap."""
        entries = await self._redis.client.xrange(self._key, min=f"0-{after + 1}", max=f"0-{until}")
        batch = [_event(entry_id, fields) for entry_id, fields in entries]
        if (batch[0].id if batch else until + 1) != after + 1 and after < until:
            raise EventsLostError(after, batch[0].id if batch else until + 1)
        if batch:
            yield batch

    async def follow(
        self, after: int = 0, *, heartbeat: float | None = None
    ) -> AsyncIterator[list[LoggedEvent]]:
        """Every event after ``after``, waiting for new ones until the ``end`` event.

        A ``heartbeat``'s empty batch comes between reads (each waits at most
        ``BLOCK_MS``), so up to that much late.
        """
        self.check_resume(after)
        beat = Heartbeat(heartbeat)
        cursor = after
        while True:
            if beat.due():
                yield []
            answer = await self._redis.client.xread({self._key: f"0-{cursor}"}, block=BLOCK_MS)
            if not answer:
                if self._ended is not None and await self._ended():
                    answer = await self._redis.client.xread({self._key: f"0-{cursor}"})
                    if not answer:
                        return
                else:
                    continue
            batch = [_event(entry_id, fields) for entry_id, fields in answer[0][1]]
            if batch[0].id != cursor + 1:
                raise EventsLostError(cursor, batch[0].id)
            yield batch
            cursor = batch[-1].id
            if batch[-1].event == "end":
                return
