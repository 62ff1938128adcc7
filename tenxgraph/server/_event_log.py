"""A run's stream events, numbered and kept in memory, so a client can rejoin a stream.

Each event a run sends over Server-Sent Events is appended here first and
gets the next number (from 1), which is its SSE ``id``. Every reader (the
client that started the run, a client joining it, a client that reconnects
with ``Last-Event-ID``) follows the same log from a number of its choosing:
it gets each later event exactly once, in order, and then waits for new ones
until the run ends. A reader that falls behind never slows the run: the run
only appends.

The log is bounded (``EventLogLimits``): past ``max_events`` events or
``max_bytes`` of data the oldest events are dropped. A reader that asks to
resume before the oldest event kept gets ``EventsLostError``, never a stream
with a silent gap; the events it lost are in the thread's state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from tenxgraph.errors import ConfigError, EventsLostError, StateError

__all__ = ["EventLog", "EventLogLimits", "Heartbeat", "LoggedEvent", "unavailable"]


def unavailable(why: str) -> str:
    """The data of the ``error`` event that tells a reader a run's events cannot be had here.

    It is followed by ``end``, so no client waits for events that will not
    come; the run's outcome and the thread's state are still there to read.
    """
    message = (
        f"the run's events are not available here ({why}); its outcome is the run's "
        "(GET .../runs/{run_id}, or .../join to wait for it), its result the thread's state"
    )
    return json.dumps({"error": "EventsUnavailable", "message": message})


@dataclass(frozen=True, slots=True)
class EventLogLimits:
    """How much of one run's stream the server keeps for readers that join or reconnect."""

    max_events: int = 50_000
    """Events kept per run; older ones are dropped first."""
    max_bytes: int = 32 * 1024 * 1024
    """Bytes of event data kept per run (the JSON text of the ``data`` fields)."""


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One SSE event: its number (the SSE ``id``), its name and its data as JSON text."""

    id: int
    event: str
    data: str


class EventLog:
    """The events of one run, in order, the newest ``limits`` of them kept."""

    def __init__(self, limits: EventLogLimits | None = None) -> None:
        self.limits = limits or EventLogLimits()
        self._events: deque[LoggedEvent] = deque()
        self._bytes = 0
        self._last = 0
        self._closed = False
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def last_id(self) -> int:
        """The number of the latest event (0 before the first)."""
        return self._last

    @property
    def first_kept(self) -> int:
        """The number of the oldest event still kept (``last_id + 1`` when none is)."""
        return self._events[0].id if self._events else self._last + 1

    @property
    def closed(self) -> bool:
        """True once the run sent its last event."""
        return self._closed

    def append(self, event: str, data: str) -> LoggedEvent:
        """Add an event (``data`` is JSON text) and wake the readers; returns it numbered."""
        if self._closed:
            raise StateError(f"the run's stream has ended; cannot add event {event!r}")
        self._last += 1
        logged = LoggedEvent(self._last, event, data)
        self._events.append(logged)
        self._bytes += len(data)
        limits = self.limits
        while len(self._events) > limits.max_events or (
            self._bytes > limits.max_bytes and len(self._events) > 1
        ):
            self._bytes -= len(self._events.popleft().data)
        self._wake()
        return logged

    @classmethod
    def unavailable(cls, limits: EventLogLimits, why: str) -> EventLog:
        """An ended log holding only the ``error`` (``unavailable(why)``) and ``end`` events."""
        log = cls(limits)
        log.append("error", unavailable(why))
        log.append("end", "null")
        log.close()
        return log

    def close(self) -> None:
        """The run has ended: readers get what is left and then stop."""
        if not self._closed:
            self._closed = True
            self._wake()

    def discard(self) -> None:
        """Drop the events kept (a finished run past the manager's ``keep_logs``)."""
        self._events.clear()
        self._bytes = 0

    def _wake(self) -> None:
        """Resolve the readers' waits (none when every reader is busy: no cost then)."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def check_resume(self, after: int) -> None:
        """Raise ``EventsLostError`` when events after ``after`` were dropped already."""
        if after < 0:
            raise StateError(f"Last-Event-ID must be an event number >= 0, got {after}")
        if after + 1 < self.first_kept and after < self._last:
            raise EventsLostError(after, self.first_kept)

    async def follow(
        self, after: int = 0, *, heartbeat: float | None = None
    ) -> AsyncIterator[list[LoggedEvent]]:
        """Yield every event numbered above ``after``, waiting for new ones until the run ends.

        Events come in batches: all those appended since the last batch, so
        a reader that writes them to a socket writes each batch at once.
        With ``heartbeat`` (seconds, > 0; None for none) an empty batch also
        comes that often, busy or idle, for a reader that keeps a quiet
        connection open with it (the SSE stream's ping comment); 0 or less
        raises ``ConfigError`` (0 would be a beat on every turn of the loop).
        Raises ``EventsLostError`` when the reader falls so far behind that the
        events it needs next were dropped.
        """
        self.check_resume(after)
        beat = Heartbeat(heartbeat)
        cursor = after
        try:
            while True:
                if beat.due():
                    yield []
                    continue
                if cursor < self._last:
                    self.check_resume(cursor)
                    start = cursor + 1 - self.first_kept
                    batch = [self._events[i] for i in range(start, len(self._events))]
                    yield batch
                    cursor = batch[-1].id
                    continue
                if self._closed:
                    return
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                beat.wake(self._beat, waiter)
                try:
                    await waiter
                finally:
                    if waiter.cancelled():  # the follower left (its client went): so its wait
                        self._forget(waiter)
                await asyncio.sleep(0)  # let the run add what it has ready: one write
        finally:
            beat.close()

    def _beat(self, waiter: asyncio.Future[None]) -> None:
        """A follower's heartbeat is due: wake it alone, its wait leaving the list with it.

        Every follower of an idle run waits again after each beat: the list would
        otherwise keep one resolved wait per beat until the run's next event.
        """
        if not waiter.done():
            self._forget(waiter)
            waiter.set_result(None)

    def _forget(self, waiter: asyncio.Future[None]) -> None:
        with contextlib.suppress(ValueError):  # not there: ``_wake`` took the list already
            self._waiters.remove(waiter)


class Heartbeat:
    """When a follower's next empty batch is due (``follow(heartbeat=seconds)``).

    Kept by the follower itself, not by a task of its own: the timer runs
    only while the follower waits for events, and one timer serves all the
    waits until the beat it is set for (a follower waits once per batch).
    """

    def __init__(self, seconds: float | None) -> None:
        if seconds is not None and not 0 < seconds < math.inf:  # NaN fails this too
            raise ConfigError(
                f"heartbeat must be a number of seconds > 0 (None for no heartbeat), got {seconds}"
            )
        self._loop = asyncio.get_running_loop()
        self.seconds = seconds
        self._next = self._loop.time() + seconds if seconds else math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._waiter: asyncio.Future[None] | None = None

    def due(self) -> bool:
        """True once a beat is due (the next one is then ``seconds`` from now)."""
        if self.seconds is None:
            return False
        now = self._loop.time()
        if now < self._next:
            return False
        self._next = now + self.seconds
        return True

    def wake(
        self, beat: Callable[[asyncio.Future[None]], None], waiter: asyncio.Future[None]
    ) -> None:
        """Call ``beat(waiter)`` when the next beat is due, unless ``waiter`` is done by then.

        The timer set for an earlier wait is kept for this one when it is
        still to come (it wakes the latest waiter); a beat that comes while
        the follower is busy wakes nobody: ``due`` tells the follower next.
        """
        if self.seconds is None:
            return
        self._waiter = waiter
        if self._timer is None:
            self._timer = self._loop.call_at(self._next, self._fire, beat)

    def _fire(self, beat: Callable[[asyncio.Future[None]], None]) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            beat(waiter)

    def close(self) -> None:
        """The follower is done: its timer goes."""
        self._waiter = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
