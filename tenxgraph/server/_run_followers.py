"""Records of runs another worker holds: their status from the run table, their events from Redis.

A request for a run this worker does not hold (``join``, a stream, a
reconnect with ``Last-Event-ID``, ``get``) is answered with a record that
follows the run: its status is the row's (polled until it ended, so
``join`` and ``/runs/wait`` answer then), and its log reads the run's Redis
Stream, which the holder writes (``_redis_events``). Without Redis the
events of another worker's run cannot be followed: the log says so.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph import RunControl
from tenxgraph.runs import FINISHED, RunRecord, settle
from tenxgraph.server._event_log import EventLog, EventLogLimits
from tenxgraph.server._redis_events import RedisStreamReader
from tenxgraph.server.remote_tools import RemoteCalls

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.runs import ClaimedRun, PgRunQueue
    from tenxgraph.server._redis_events import RedisEvents

__all__ = ["RunFollowers"]

KEEP = 1000
"""Records of other workers' runs kept (the oldest are dropped first)."""


class RunFollowers:
    """One worker's records of the runs other workers hold."""

    def __init__(
        self,
        graph: CompiledGraph[Any],
        queue: PgRunQueue,
        events: RedisEvents | None,
        limits: EventLogLimits,
        poll_seconds: float,
        spawn: Callable[[Any], asyncio.Task[Any]],
    ) -> None:
        """``spawn`` runs a background task of the worker (cancelled at its shutdown)."""
        self.graph, self.queue, self.events, self.limits = graph, queue, events, limits
        self.poll_seconds, self._spawn = poll_seconds, spawn
        self._records: OrderedDict[str, RunRecord] = OrderedDict()

    async def locate(
        self, user_id: str, run_id: str, thread_id: str | None = None
    ) -> RunRecord | None:
        """A record following run ``run_id`` of ``user_id`` (on ``thread_id``), None if unknown."""
        row = await self.queue.get(user_id, run_id)
        if row is None or (thread_id is not None and row.thread_id != thread_id):
            return None
        known = self._records.get(run_id)
        if known is not None and not known.finished:
            self._follow_row(known, row)
            return known
        record = await self._follower(row)
        self._records[run_id] = record
        while len(self._records) > KEEP:
            self._records.popitem(last=False)
        return record

    def forget(self, run_id: str) -> None:
        """Drop the record of an ended run."""
        self._records.pop(run_id, None)

    async def _follower(self, row: ClaimedRun) -> RunRecord:
        data = row.record
        log: EventLog
        if self.events is not None:

            async def ended() -> bool:
                now = await self.queue.get(row.user_id, row.run_id)
                return now is None or now.status in FINISHED

            reader = RedisStreamReader(self.events, self.events.key(row.run_id), ended=ended)
            await reader.prepare()
            log = reader
        else:  # no Redis: the events of another worker's run cannot be followed from here
            log = EventLog.unavailable(self.limits, "this server runs without Redis")
        record = RunRecord(
            run_id=row.run_id,
            thread_id=row.thread_id,
            user_id=row.user_id,
            assistant_id=str(data.get("assistant_id", "")),
            multitask_strategy=str(data.get("multitask_strategy", "")),
            metadata=dict(data.get("metadata") or {}),
            kwargs=dict(data.get("kwargs") or {}),
            log=log,
            graph=self.graph,
            control=RunControl(row.run_id, None),
            remote=RemoteCalls(),
            created_at=str(data.get("created_at", "")),
            started=True,
        )
        if row.status in FINISHED:
            settle(record, row.status, row.output)
        else:
            record.set_status("running" if row.status == "running" else "pending")
            self._spawn(self._watch(record))
        return record

    async def _watch(self, record: RunRecord) -> None:
        """Poll the row of a run held elsewhere until it ended (join and wait end then)."""
        while not record.finished:
            await asyncio.sleep(self.poll_seconds * 2)
            with contextlib.suppress(Exception):
                self._follow_row(record, await self.queue.get(record.user_id, record.run_id))

    def _follow_row(self, record: RunRecord, row: ClaimedRun | None) -> None:
        """Bring the record of a run held elsewhere up to its row (read just now)."""
        if row is None:
            settle(record, "error", {"__error__": {"error": "RunLost"}})
        elif row.status in FINISHED:
            settle(record, row.status, row.output)
        elif row.status != record.status:
            record.set_status("running" if row.status == "running" else "pending")
