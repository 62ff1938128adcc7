"""Run streams across workers: each run's events also go to a Redis Stream, numbered as on SSE.

The worker running a run writes its events to the run's ``EventLog`` as a
single worker does (its own readers follow that log in memory), and a
background task copies them, in order and in batches (the batches of the
worker's runs share pipelines), to the Redis Stream ``<prefix><run_id>`` with the entry id ``0-N``
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
with the in-memory log. The expiry is set with a writer's first batch, with
the batch that ends the run, with any batch sent more than half the TTL
after the last one set it, and with a catch-up's: not with every batch (a
command each). So a stream always has one (a batch may re-create an expired
stream only past that half), and one whose worker died or handed its run
back expires at least half the TTL after its last event.

**Redis is a transport, not the record**, so it is never waited on: the
run's outcome is in Postgres and the thread's state has everything the
events said. Every Redis call is bounded by ``timeout``; one that fails
marks Redis unavailable for ``retry_seconds`` (others skip it meanwhile,
logged once per outage). Then:

- the running worker puts its events in memory at once (its own readers go
  on) and keeps those Redis did not get; every ``retry_seconds`` it tries
  again, and once Redis answers it publishes them, same numbers, in order,
  ``end`` included (for up to ``backlog_seconds``, and the newest
  ``max_events`` of them);
- a follower on another worker keeps its stream open (heartbeats) and
  reads on from where it was once Redis answers; when the run ended (its
  row says so) and no ``end`` came within ``settle_seconds``, it is told:
  an ``error`` event ``EventsUnavailable``, then ``end``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, NamedTuple, TypeVar

from tenxgraph.errors import EventsLostError, StateError, StorageUnavailableError
from tenxgraph.server._event_log import (
    EventLog,
    EventLogLimits,
    Heartbeat,
    LoggedEvent,
    unavailable,
)

__all__ = ["RedisEvents", "RedisStreamReader", "RedisStreamWriter"]

logger = logging.getLogger("tenxgraph.server.runs")

T = TypeVar("T")

BLOCK_MS = 1000
"""How long one ``XREAD BLOCK`` waits before a follower checks whether the run ended."""
CHUNK = 500
"""Events per pipeline when a writer publishes what an outage held back."""


def _number(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[1])


def _event(entry_id: bytes | str, fields: dict[Any, Any]) -> LoggedEvent:
    def text(value: Any) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    return LoggedEvent(_number(entry_id), text(fields[b"e"]), text(fields[b"d"]))


class _Part(NamedTuple):
    """One writer's batch in the shared pipeline, and the future its writer awaits."""

    key: str
    batch: list[LoggedEvent]
    max_events: int
    expire: bool
    future: asyncio.Future[None]


class RedisEvents:
    """The Redis client and settings the run streams of one server share, and Redis's health."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "tenxgraph:runs:",
        ttl_seconds: int = 86_400,
        timeout: float = 1.0,
        retry_seconds: float = 1.0,
        backlog_seconds: float = 600.0,
        settle_seconds: float = 5.0,
    ) -> None:
        """Connect to ``url`` (lazily); keys start with ``prefix``.

        ``timeout`` bounds each call (an ``XREAD BLOCK`` gets its block on
        top); after a failure Redis is skipped for ``retry_seconds``.
        """
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError

        self.prefix, self.ttl_seconds = prefix, ttl_seconds
        self.timeout, self.retry_seconds = timeout, retry_seconds
        self.backlog_seconds, self.settle_seconds = backlog_seconds, settle_seconds
        self.client: Any = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout + BLOCK_MS / 1000,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),  # a failure is reported at once; callers retry later
        )
        self._errors: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
        self._skip_until = 0.0
        self._failing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._outbox: list[_Part] = []
        """Writers' batches waiting for the next shared pipeline (``add``)."""
        self._sender: asyncio.Task[None] | None = None

    def key(self, run_id: str) -> str:
        """The stream of run ``run_id``."""
        return f"{self.prefix}{run_id}"

    @property
    def available(self) -> bool:
        """False for ``retry_seconds`` after a call failed: callers skip Redis meanwhile."""
        return time.monotonic() >= self._skip_until

    async def call(
        self,
        operation: Callable[[], Coroutine[Any, Any, T]],
        *,
        block: float = 0,
        probe: bool = False,
    ) -> T:
        """Run one Redis call within ``timeout`` (+ ``block``); ``StorageUnavailableError`` else.

        While Redis is unavailable the call is not tried (a ``probe`` is: a
        writer's catch-up). The first failure of an outage is logged as a
        warning, the first success after it as info.
        """
        if not (probe or self.available):
            raise StorageUnavailableError("Redis (run streams) failed a moment ago")
        try:
            async with asyncio.timeout(self.timeout + block):
                result = await operation()
        except self._errors as exc:
            self._skip_until = time.monotonic() + self.retry_seconds
            reason = str(exc) or f"no answer within {self.timeout + block:g}s"
            if not self._failing:
                self._failing = True
                logger.warning(
                    "run streams: Redis failed (%s); runs go on, their events are kept here "
                    "and published once it answers",
                    reason,
                )
            raise StorageUnavailableError(f"Redis (run streams): {reason}") from exc
        if self._failing:
            self._failing = False
            logger.info("run streams: Redis answers again")
        return result

    async def last_event_id(self, run_id: str) -> int | None:
        """The number of the run's latest event in Redis (0: none; None: Redis did not answer)."""
        try:
            return await self.newest(self.key(run_id))
        except StorageUnavailableError:
            return None

    async def start_after(self, run_id: str, attempt: int) -> int | None:
        """The number attempt ``attempt`` of a run goes on from (None: Redis did not answer).

        A first attempt published nothing, so Redis is not asked: a run
        queued while Redis is down starts all the same.
        """
        return 0 if attempt <= 1 else await self.last_event_id(run_id)

    async def newest(self, key: str, *, probe: bool = False) -> int:
        """The number of the newest entry of stream ``key`` (0: none); raises when Redis fails."""
        entries = await self.call(lambda: self.client.xrevrange(key, count=1), probe=probe)
        return _number(entries[0][0]) if entries else 0

    async def add(self, key: str, batch: list[LoggedEvent], max_events: int, expire: bool) -> None:
        """``XADD`` ``batch`` to stream ``key`` (``EXPIRE`` it if ``expire``); raises as Redis does.

        The runs' writers share one pipeline: the batches added while one is on
        its way go together in the next (one round trip for many runs, not one
        each). A writer's commands failing fail only its own call; once
        ``aclose`` stopped the sending, ``StorageUnavailableError``.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.append(_Part(key, batch, max_events, expire, future))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send())
            self._tasks.add(self._sender)  # ``aclose`` stops it
            self._sender.add_done_callback(self._tasks.discard)
        await future

    async def _send(self) -> None:
        """Send the queued batches, a pipeline at a time, until none is left."""
        while self._outbox:
            parts, self._outbox = self._outbox, []
            pipe = self.client.pipeline(transaction=False)
            for key, batch, max_events, expire, _ in parts:
                for logged in batch:
                    fields = {"e": logged.event, "d": logged.data}
                    pipe.xadd(key, fields, id=f"0-{logged.id}", maxlen=max_events, approximate=True)
                if expire:
                    pipe.expire(key, self.ttl_seconds)
            count = len(pipe)
            try:
                async with asyncio.timeout(self.timeout):
                    replies = await pipe.execute(raise_on_error=False)
            except Exception as exc:
                replies = [exc] * count
            except BaseException:  # cancelled (``aclose``): the writers hold their batches
                closed = StorageUnavailableError("Redis (run streams): the client closed")
                for part in parts + self._outbox:
                    if not part.future.done():
                        part.future.set_exception(closed)
                raise
            start = 0
            for part in parts:
                end = start + len(part.batch) + part.expire
                failed = [r for r in replies[start:end] if isinstance(r, Exception)]
                start = end
                if part.future.done():  # its writer stopped waiting (its own timeout)
                    continue
                if failed:
                    part.future.set_exception(failed[0])
                else:
                    part.future.set_result(None)

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run a writer's catch-up in the background (``aclose`` stops it)."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def ping(self) -> None:
        """One round trip."""
        await self.call(self.client.ping)

    async def aclose(self) -> None:
        """Stop the catch-ups (their events stay unpublished) and close the connections."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
        try:
            await self.client.aclose()
        except self._errors as exc:
            logger.debug("run streams: closing the Redis client: %s", exc)


class RedisStreamWriter(EventLog):
    """The running worker's log: each event goes to the run's Redis Stream, then into memory.

    While Redis answers, readers on this worker (the in-memory log) only see
    events already in Redis, so a client that reconnects elsewhere never
    holds an event number Redis did not get. While it does not, events go
    into memory at once and wait in ``_unsent`` for Redis (see the module).
    """

    def __init__(
        self,
        events: RedisEvents,
        run_id: str,
        limits: EventLogLimits | None = None,
        *,
        start_after: int | None = 0,
    ) -> None:
        """Number events after ``start_after`` (the last one an earlier attempt published).

        None: Redis could not say (it is down while a resumed run starts).
        This attempt's events then stay on this worker, numbered from 1:
        followers elsewhere are told they are unavailable once the run ended.
        """
        super().__init__(limits)
        self._redis, self._key = events, events.key(run_id)
        self._last = self._next = self._start_after = start_after or 0
        self._pending: list[LoggedEvent] = []
        self._unsent: deque[LoggedEvent] = deque()
        """Events in memory here that Redis has not got yet (an outage); published in order."""
        self._unsent_bytes = 0
        self._flusher: asyncio.Task[None] | None = None
        self._expire_at = 0.0
        """When a batch sets the stream's expiry again (``_write``): at once, then past half
        the TTL after it was set."""
        self._ending = False
        self._local = start_after is None
        """True when this attempt publishes nothing more (numbering unknown, handed back)."""
        self._handed_back = False

    @property
    def hand_back(self) -> bool:
        """True once this worker gave the run up unfinished (``DurableRunManager._give_up``)."""
        return self._handed_back

    @hand_back.setter
    def hand_back(self, value: bool) -> None:
        """Giving the run up: nothing more is published (not its ``end``, not a backlog).

        Followers elsewhere go on with the next attempt's events, numbered
        after what Redis holds.
        """
        self._handed_back = value
        if value:
            self._stay_local()

    def _stay_local(self) -> None:
        """Publish nothing more: what Redis did not get stays in this worker's memory."""
        self._local = True
        self._unsent.clear()
        self._unsent_bytes = 0

    @property
    def closed(self) -> bool:
        """True once the run sent its last event (it may still be on its way to Redis)."""
        return self._ending

    def append(self, event: str, data: str) -> LoggedEvent:
        """Number the event and queue it: Redis first, then this worker's readers."""
        if self._ending:
            raise StateError(f"the run's stream has ended; cannot add event {event!r}")
        idle = self._flusher is None or self._flusher.done()
        if (self._local or self._unsent) and idle:  # Redis is behind: readers here go on
            logged = super().append(event, data)
            self._next = logged.id
            self._hold([logged])
            return logged
        self._next += 1
        logged = LoggedEvent(self._next, event, data)
        self._pending.append(logged)
        self._kick()
        return logged

    def close(self) -> None:
        """End the log once what is queued was published (or held back for Redis)."""
        if not self._ending:
            self._ending = True
            self._kick()

    def _kick(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def flushed(self) -> None:
        """Wait until every event appended so far is here, and in Redis or held for it.

        Bounded by one Redis ``timeout``: an outage is not waited out.
        """
        while self._flusher is not None and not self._flusher.done():
            await self._flusher

    async def _flush(self) -> None:
        await asyncio.sleep(0)  # gather what the run adds in this turn of the loop
        while self._pending:
            batch, self._pending = self._pending, []
            if self._local or self._unsent or not await self._publish(batch):
                self._hold(batch)
            for logged in batch:
                super().append(logged.event, logged.data)
        if self._ending:
            super().close()

    async def _publish(self, batch: list[LoggedEvent]) -> bool:
        """Write ``batch`` to Redis; False (not waiting) when Redis is unavailable."""
        if not self._redis.available:
            return False
        try:
            await self._redis.call(lambda: self._write(batch))
        except StorageUnavailableError:
            return False
        return True

    def _hold(self, batch: list[LoggedEvent]) -> None:
        """Keep events Redis did not get, the newest ``max_events``; start the catch-up."""
        if self._local:
            return
        start = not self._unsent
        self._unsent.extend(batch)
        self._unsent_bytes += sum(len(logged.data) for logged in batch)
        limits = self.limits
        while len(self._unsent) > limits.max_events or self._unsent_bytes > limits.max_bytes:
            self._unsent_bytes -= len(self._unsent.popleft().data)  # a gap: EventsLostError
        if start:
            self._redis.spawn(self._catch_up())

    async def _catch_up(self) -> None:
        """Every ``retry_seconds``, publish what Redis did not get, until it has all of it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._redis.backlog_seconds
        while self._unsent and not self._local:
            await asyncio.sleep(self._redis.retry_seconds)
            if loop.time() > deadline:
                logger.warning(
                    "run stream %s: Redis did not answer for %gs; %d events stay on this worker",
                    self._key,
                    self._redis.backlog_seconds,
                    len(self._unsent),
                )
                self._stay_local()
                return
            try:
                await self._send_unsent()
            except StorageUnavailableError:
                continue

    async def _send_unsent(self) -> None:
        """Publish the held events Redis lacks (a timed-out write may have landed in part)."""
        top = await self._redis.newest(self._key, probe=True)
        while self._unsent and not self._local:
            while self._unsent and self._unsent[0].id <= top:
                self._unsent_bytes -= len(self._unsent.popleft().data)
            batch = [self._unsent[i] for i in range(min(CHUNK, len(self._unsent)))]
            if not batch:
                return
            await self._redis.call(partial(self._write, batch, expire=True), probe=True)
            top = batch[-1].id

    async def _write(self, batch: list[LoggedEvent], *, expire: bool = False) -> None:
        """``XADD`` the batch (the shared pipeline), with the stream's ``EXPIRE`` when it is due.

        Due: ``expire``, a writer's first batch, the run's last (the log is closing), or
        half the TTL after the last one sent.
        """
        now = time.monotonic()
        expire = expire or self._ending or now >= self._expire_at
        await self._redis.add(self._key, batch, self.limits.max_events, expire)
        if expire:
            self._expire_at = now + self._redis.ttl_seconds / 2

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
        no ``end`` event, and neither has one whose worker could not publish
        it (see the module).
        """
        super().__init__()
        self._redis, self._key, self._ended = events, key, ended
        self._first = 1
        self._down = False

    async def prepare(self) -> None:
        """Read the oldest and newest entries kept, so ``check_resume`` answers without a trip.

        Redis not answering is no error here: the follower waits for it (see ``follow``).
        """
        client = self._redis.client

        async def ends() -> list[Any]:
            pipe = client.pipeline(transaction=False)
            pipe.xrange(self._key, count=1)
            pipe.xrevrange(self._key, count=1)
            return list(await pipe.execute())

        try:
            first, newest = await self._redis.call(ends)
        except StorageUnavailableError:
            self._down = True
            return
        self._first = _number(first[0][0]) if first else 1
        self._last = _number(newest[0][0]) if newest else 0

    @property
    def first_kept(self) -> int:
        """The oldest entry kept (as of ``prepare``)."""
        return self._first

    async def read_range(self, after: int, until: int) -> AsyncIterator[list[LoggedEvent]]:
        """The events numbered ``after + 1`` to ``until``, checked for a gap.

        Raises ``EventsLostError`` when they are not all there, or Redis does not answer.
        """
        try:
            entries = await self._redis.call(
                lambda: self._redis.client.xrange(self._key, min=f"0-{after + 1}", max=f"0-{until}")
            )
        except StorageUnavailableError:
            raise EventsLostError(after, until + 1) from None
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
        ``BLOCK_MS``, or ``retry_seconds`` while Redis fails), so up to that
        much late. Once the run ended, an ``end`` that does not come within
        ``settle_seconds`` is replaced by an ``error`` event
        (``EventsUnavailable``) and an ``end``, numbered on but stored nowhere.
        """
        self.check_resume(after)
        beat = Heartbeat(heartbeat)
        loop = asyncio.get_running_loop()
        cursor, ended_at = after, None
        while True:
            if beat.due():
                yield []
            batch = await self._read(cursor)
            if batch:
                if batch[0].id != cursor + 1:
                    raise EventsLostError(cursor, batch[0].id)
                yield batch
                cursor = batch[-1].id
                if batch[-1].event == "end":
                    return
                ended_at = None if ended_at is None else loop.time()  # still coming: wait on
            elif ended_at is None:
                ended_at = loop.time() if await self._has_ended() else None
            elif loop.time() - ended_at >= self._redis.settle_seconds:
                yield self._unavailable(cursor)
                return

    async def _read(self, cursor: int) -> list[LoggedEvent]:
        """The events after ``cursor`` (waiting up to ``BLOCK_MS``); none while Redis fails."""
        if not self._redis.available:
            self._down = True
            await asyncio.sleep(self._redis.retry_seconds)
            return []
        try:
            answer = await self._redis.call(
                lambda: self._redis.client.xread({self._key: f"0-{cursor}"}, block=BLOCK_MS),
                block=BLOCK_MS / 1000,
            )
        except StorageUnavailableError:
            self._down = True
            return []
        self._down = False
        return [_event(entry_id, fields) for entry_id, fields in answer[0][1]] if answer else []

    async def _has_ended(self) -> bool:
        if self._ended is None:
            return False
        try:
            return await self._ended()
        except Exception as exc:  # the run table does not answer either: ask again later
            logger.debug("run stream %s: cannot tell whether the run ended: %s", self._key, exc)
            return False

    def _unavailable(self, cursor: int) -> list[LoggedEvent]:
        """What a follower is told when the run ended and its stream has no ``end``."""
        why = "Redis does not answer" if self._down else "its worker could not publish them"
        data = unavailable(f"the run ended, but not its events after {cursor}: {why}")
        return [LoggedEvent(cursor + 1, "error", data), LoggedEvent(cursor + 2, "end", "null")]
