"""Crons: runs started on a schedule, kept beside the runs they start.

A ``Cron`` is a schedule (five cron fields, in a time zone) and the run to
start on each of its ticks: the run's fields as the layer above checked
them when the cron was made (``run``: ``kwargs``, ``metadata``), on its
thread or, without one, on a new thread per run. Its ``next_run_at`` is
the next tick; a tick is **claimed by moving ``next_run_at`` past it in the
same step that queues its run**, so a tick starts one run however many
schedulers look at it:

- ``MemoryCronTable``: one process's crons (a server without Postgres, whose
  runs live in memory too); ``due`` moves the ticks on and hands the runs
  to the scheduler's ``fire``, which starts them in the process's registry.
- ``PgCronTable`` (``_pg_crons``): a table beside the run table; ``due``
  takes the due rows ``FOR UPDATE SKIP LOCKED``, moves them on and inserts
  their runs as pending rows of the run table in one transaction, so any
  worker claims them and a crash leaves either both or neither.

``CronScheduler`` calls ``due`` every ``poll_seconds`` with the clock's time;
tests call ``tick(now)`` with a time of their own. A cron whose ticks were
missed (the server was down) runs once for them, at the first look after,
then on its schedule. This package stays below the runtime: turning a run's
fields into a run is the layer above's (``fire``, or the run table's claim).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tenxgraph.errors import StateError

__all__ = [
    "Cron",
    "CronQuery",
    "CronScheduler",
    "CronTable",
    "DueRun",
    "MemoryCronTable",
    "check_schedule",
    "next_tick",
]

logger = logging.getLogger("tenxgraph.server.runs")

UTC = dt.UTC


def _zone(timezone: str | None) -> dt.tzinfo:
    if not timezone:
        return UTC
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise StateError(f"timezone {timezone!r} is not an IANA time zone name") from exc


def next_tick(schedule: str, timezone: str | None, after: dt.datetime) -> dt.datetime | None:
    """The schedule's first tick strictly after ``after`` (UTC), None when it has none."""
    from cronsim import CronSim, CronSimError

    try:
        ticks = CronSim(schedule, after.astimezone(_zone(timezone)))
        return next(ticks).astimezone(UTC)
    except CronSimError as exc:
        raise StateError(
            f"schedule {schedule!r} is not a cron expression ({exc}): give five fields, "
            "minute hour day-of-month month day-of-week, e.g. '*/15 * * * *'"
        ) from exc
    except StopIteration:
        return None


def check_schedule(schedule: str, timezone: str | None = None) -> None:
    """Raise ``StateError`` for an expression or time zone that cannot be scheduled."""
    if not isinstance(schedule, str) or not schedule.strip():
        raise StateError("schedule must be a cron expression, e.g. '*/15 * * * *'")
    next_tick(schedule, timezone, dt.datetime.now(UTC))


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(slots=True)
class Cron:
    """One schedule and the run it starts."""

    cron_id: str
    user_id: str
    assistant_id: str
    thread_id: str | None
    schedule: str
    payload: dict[str, Any]
    """The run's fields as the client gave them (shown, and given back on update)."""
    run: dict[str, Any]
    """The run as the layer above checked it: ``kwargs`` and ``metadata``."""
    timezone: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    on_run_completed: str | None = None
    """A cron without a thread: ``keep`` keeps each run's new thread, ``delete`` (default)
    deletes it when the run ended."""
    end_time: dt.datetime | None = None
    enabled: bool = True
    next_run_at: dt.datetime | None = None
    created_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(UTC))
    updated_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(UTC))

    def scheduled(self, now: dt.datetime) -> Cron:
        """A copy whose ``next_run_at`` is its first tick after ``now`` (None: no more ticks)."""
        tick = next_tick(self.schedule, self.timezone, now)
        if tick is not None and self.end_time is not None and tick > self.end_time:
            tick = None
        return replace(self, next_run_at=tick)

    def due_run(self, now: dt.datetime) -> DueRun:
        """The run of the tick due at ``now``: a new run id, on the cron's thread or a new one."""
        run_id, thread_id = str(uuid.uuid4()), self.thread_id or str(uuid.uuid4())
        stamp = now.isoformat()
        kwargs = dict(self.run.get("kwargs") or {})
        record = {
            "run_id": run_id,
            "thread_id": thread_id,
            "assistant_id": self.assistant_id,
            "created_at": stamp,
            "updated_at": stamp,
            "status": "pending",
            "metadata": {**self.run.get("metadata", {}), "cron_id": self.cron_id},
            "multitask_strategy": "enqueue",  # a tick waits for the thread's runs before it
            "kwargs": kwargs,
            "cancel_reason": None,
        }
        delete = self.thread_id is None and self.on_run_completed != "keep"
        request = {"kwargs": kwargs, "delete_thread": delete}
        return DueRun(self.cron_id, self.user_id, run_id, thread_id, record, request)

    def as_json(self) -> dict[str, Any]:
        """The cron as the SDKs' ``Cron`` type has it."""
        return {
            "cron_id": self.cron_id,
            "assistant_id": self.assistant_id,
            "thread_id": self.thread_id,
            "on_run_completed": self.on_run_completed or ("keep" if self.thread_id else "delete"),
            "end_time": _iso(self.end_time),
            "schedule": self.schedule,
            "timezone": self.timezone,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "payload": self.payload,
            "user_id": self.user_id,
            "next_run_date": _iso(self.next_run_at),
            "metadata": self.metadata,
            "enabled": self.enabled,
        }


@dataclass(frozen=True, slots=True)
class DueRun:
    """A run a tick started: its row as the run table keeps it (``record``, ``request``)."""

    cron_id: str
    user_id: str
    run_id: str
    thread_id: str
    record: dict[str, Any]
    request: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CronQuery:
    """Which of a user's crons a search or count finds."""

    user_id: str
    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: Mapping[str, Any] | None = None

    def matches(self, cron: Cron) -> bool:
        """True when ``cron`` is one of them."""
        return (
            cron.user_id == self.user_id
            and self.assistant_id in (None, cron.assistant_id)
            and self.thread_id in (None, cron.thread_id)
            and self.enabled in (None, cron.enabled)
            and all(cron.metadata.get(k) == v for k, v in (self.metadata or {}).items())
        )


SORTS = ("cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at",
         "updated_at")  # fmt: skip
"""The fields a search sorts by (the SDKs' ``CronSortBy``)."""


class CronTable(Protocol):
    """Where crons are kept, and how a due tick becomes a queued run."""

    enqueues: bool
    """True when ``due`` queues the runs itself (the run table); False: the scheduler fires."""

    async def create(self, cron: Cron) -> Cron: ...
    async def get(self, user_id: str, cron_id: str) -> Cron | None: ...
    async def put(self, cron: Cron) -> None:
        """Store a changed cron (same id)."""

    async def delete(self, user_id: str, cron_id: str) -> bool: ...
    async def search(
        self, query: CronQuery, *, limit: int, offset: int, sort_by: str, descending: bool
    ) -> list[Cron]: ...
    async def count(self, query: CronQuery) -> int: ...
    async def due(self, now: dt.datetime, limit: int = 100) -> list[DueRun]:
        """Claim the ticks due at ``now`` (each once), moving each cron to its next tick."""


def _sort_key(sort_by: str) -> Callable[[Cron], Any]:
    far = dt.datetime.max.replace(tzinfo=UTC)
    name = "next_run_at" if sort_by == "next_run_date" else sort_by
    return lambda cron: getattr(cron, name) or (far if name in ("next_run_at", "end_time") else "")


class MemoryCronTable:
    """One process's crons (a server whose runs live in its memory)."""

    enqueues = False

    def __init__(self) -> None:
        self._crons: dict[str, Cron] = {}

    async def create(self, cron: Cron) -> Cron:
        self._crons[cron.cron_id] = cron
        return cron

    async def get(self, user_id: str, cron_id: str) -> Cron | None:
        cron = self._crons.get(cron_id)
        return cron if cron is not None and cron.user_id == user_id else None

    async def put(self, cron: Cron) -> None:
        self._crons[cron.cron_id] = cron

    async def delete(self, user_id: str, cron_id: str) -> bool:
        return await self.get(user_id, cron_id) is not None and bool(self._crons.pop(cron_id))

    async def search(
        self, query: CronQuery, *, limit: int, offset: int, sort_by: str, descending: bool
    ) -> list[Cron]:
        found = sorted(
            (c for c in self._crons.values() if query.matches(c)),
            key=_sort_key(sort_by),
            reverse=descending,
        )
        return found[offset : offset + limit]

    async def count(self, query: CronQuery) -> int:
        return sum(1 for c in self._crons.values() if query.matches(c))

    async def due(self, now: dt.datetime, limit: int = 100) -> list[DueRun]:
        ready = [
            c
            for c in self._crons.values()
            if c.enabled and c.next_run_at is not None and c.next_run_at <= now
        ][:limit]
        runs = []
        for cron in ready:
            self._crons[cron.cron_id] = cron.scheduled(now)
            runs.append(cron.due_run(now))
        return runs


class CronScheduler:
    """Turns the due ticks of a ``CronTable`` into runs, every ``poll_seconds``."""

    def __init__(
        self,
        table: CronTable,
        fire: Callable[[DueRun], Awaitable[Any]],
        *,
        poll_seconds: float = 1.0,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(UTC),
    ) -> None:
        """``fire`` starts a due run when the table does not queue it (``enqueues`` False)."""
        self.table, self.fire = table, fire
        self.poll_seconds, self.clock = poll_seconds, clock
        self._task: asyncio.Task[None] | None = None

    async def tick(self, now: dt.datetime | None = None) -> list[DueRun]:
        """Start the runs due at ``now`` (the clock's time by default); answer them."""
        runs = await self.table.due(now or self.clock())
        if not self.table.enqueues:
            for run in runs:
                try:
                    await self.fire(run)
                except Exception as exc:  # one cron's bad run does not stop the others
                    logger.warning("cron %s: run %s not started: %s", run.cron_id, run.run_id, exc)
        return runs

    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception as exc:  # an outage: the ticks wait for the next look
                logger.warning("cron scheduler: %s", exc)
            await asyncio.sleep(self.poll_seconds)

    async def open(self) -> None:
        """Start looking for due ticks."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def aclose(self) -> None:
        """Stop looking."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
