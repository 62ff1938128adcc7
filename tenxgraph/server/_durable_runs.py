"""Runs that survive their worker: the run manager of a server on Postgres (and Redis).

``DurableRunManager`` is the in-process ``RunManager`` (same records, logs,
per-thread order, cancel through the graph's stop) plus a row per run in
``PgRunQueue``:

- **Every run is a row, leased by the worker running it.** A run starts
  where it was asked for (no hop), its row added held by that worker and
  kept by a heartbeat (every ``queue.heartbeat_seconds``). Once a killed
  worker's lease expired, a consumer of another worker claims the row and
  **resumes** the run: if the thread moved past the version the first
  attempt began from, the input was saved and the run continues the thread
  (input None; the tool ledger keeps finished tools from running again);
  otherwise the input is run again. A turn that had completed is recorded.
- **Consumers**: ``consumers`` tasks per worker claim rows no live worker holds.
- **Streams.** With Redis, each run's events also go to a Redis Stream
  (``_redis_events``), so ``locate`` answers a run held by another worker
  with a record whose log reads that stream: join, stream and reconnect with
  ``Last-Event-ID`` work on any worker.
- **Cancel** on any worker: the holder's own record is stopped at once; a
  run held elsewhere gets the request in its row, which its holder reads
  with its next heartbeat and then stops it as a local cancel does. Tool
  results for a run held elsewhere go to its holder (``_tool_relay``).
- **Shutdown** (``aclose``): stop claiming, let held runs finish for up to
  ``drain_seconds``, then cut the rest off and hand their rows back (no
  lease to wait for: another worker resumes them at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import random
import socket
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pydantic_core

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ThreadBusyError
from tenxgraph.server._event_log import EventLog, EventLogLimits
from tenxgraph.server._redis_events import RedisStreamReader, RedisStreamWriter
from tenxgraph.server._run_manager import (
    DRAIN_SECONDS,
    FINISHED,
    CancelAction,
    RunManager,
    RunRecord,
    RunSpec,
)
from tenxgraph.server._run_stream import StreamEncoder
from tenxgraph.server._tool_relay import ToolResultRelay

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.server._pg_queue import ClaimedRun, PgRunQueue
    from tenxgraph.server._redis_events import RedisEvents

__all__ = ["DurableRunManager", "default_worker_id"]

logger = logging.getLogger("tenxgraph.server.runs")

MAX_ATTEMPTS = 5
"""Claims of one run after which it ends ``error`` instead of being run again."""
_HANDED_BACK = frozenset({"shutdown", "lease lost"})
"""Cancel reasons of runs this worker gives up without ending them (another one resumes them)."""


def default_worker_id() -> str:
    """The name of this process in the run table: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class DurableRunManager(RunManager):
    """The run manager of one worker among several sharing a Postgres run table."""

    def __init__(
        self,
        graph: CompiledGraph[Any],
        queue: PgRunQueue,
        events: RedisEvents | None = None,
        *,
        limits: EventLogLimits | None = None,
        keep_finished: int = 10_000,
        keep_logs: int = 1_000,
        consumers: int = 4,
        poll_seconds: float = 0.25,
        drain_seconds: float = DRAIN_SECONDS,
        worker_id: str | None = None,
    ) -> None:
        """Run ``graph``'s runs, recorded in ``queue``; ``events`` shares streams across workers."""
        super().__init__(limits, keep_finished=keep_finished, keep_logs=keep_logs)
        self.graph, self.queue, self.events = graph, queue, events
        self.consumers, self.poll_seconds = consumers, poll_seconds
        self.drain_seconds = drain_seconds
        self.worker_id = worker_id or default_worker_id()
        self.encoder = StreamEncoder()
        self._held: dict[str, RunRecord] = {}
        self.relay = ToolResultRelay(queue, self.worker_id, self._held.get)
        self._adds: dict[str, asyncio.Task[None]] = {}
        self._rows: set[str] = set()
        """Held runs whose row is in the table (the heartbeat extends these)."""
        self._resumes: dict[str, tuple[int, int | None]] = {}
        """Claimed runs being started: run id -> (attempt, last event id published)."""
        self._remote: OrderedDict[str, RunRecord] = OrderedDict()
        self._background: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._claims_failing = False
        self._work = asyncio.Event()
        """Set by a notification that a run became claimable; consumers wait on it."""
        self.on_ended: Callable[[RunRecord], None] | None = None
        """Called with each run this worker ended (``/metrics`` counts its latency)."""

    # --- lifecycle --------------------------------------------------------------------

    async def open(self) -> None:
        """Start the heartbeat and the consumers (server startup)."""
        self._spawn(self._heartbeats())
        wake = {self.queue.channel: lambda _: self._work.set()}
        self._spawn(self.queue.listen({**wake, self.relay.channel: self.relay.notified}))
        self._spawn(self.relay.serve())
        for _ in range(self.consumers):
            self._spawn(self._consume())
        logger.info("worker %s: taking runs (%d consumers)", self.worker_id, self.consumers)

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        self._background.add(task := asyncio.get_running_loop().create_task(coroutine))
        task.add_done_callback(self._background.discard)
        return task

    async def aclose(self, grace: float = DRAIN_SECONDS) -> None:
        """Graceful shutdown: stop claiming, drain, hand the rest back, close connections."""
        self._closing = True
        running = [r.task for r in self._held.values() if r.task is not None and not r.finished]
        if running and self.drain_seconds > 0:
            await asyncio.wait(running, timeout=self.drain_seconds)
        left = [r for r in self._held.values() if not r.finished and r.task is not None]
        for record in left:
            self._give_up(record, "shutdown")
        if left:
            await asyncio.wait([r.task for r in left if r.task is not None], timeout=grace)
        await super().aclose(grace)
        for task in list(self._background):
            task.cancel()
        for task in list(self._background):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.queue.aclose()
        if self.events is not None:
            await self.events.aclose()

    # --- hooks of RunManager ----------------------------------------------------------

    def start(
        self,
        spec: RunSpec,
        *,
        assistant_id: str,
        metadata: Any = None,
        kwargs: Any = None,
    ) -> RunRecord:
        """Start the run here, as one worker does, and add its row held by this worker."""
        resumed = str(spec.config.get("run_id") or "") in self._resumes
        record = super().start(spec, assistant_id=assistant_id, metadata=metadata, kwargs=kwargs)
        self._resumes.pop(record.run_id, None)
        self._held[record.run_id] = record
        if resumed:
            self._rows.add(record.run_id)
        else:
            request = {
                "kwargs": pydantic_core.to_jsonable_python(record.kwargs),
                "delete_thread": spec.on_completion is not None,
                "after_seconds": spec.after_seconds,
            }
            task = asyncio.get_running_loop().create_task(self._add(record, request))
            self._adds[record.run_id] = task
        return record

    async def enqueue(
        self,
        spec: RunSpec,
        *,
        assistant_id: str,
        metadata: Any = None,
        kwargs: Any = None,
    ) -> RunRecord:
        """A background run: a row no worker holds yet; the first free consumer takes it.

        ``reject`` is answered from the run table (``admit``); ``enqueue``
        rows wait behind the thread's earlier runs. ``interrupt``, ``rollback``
        and ``after_seconds`` runs start here (held), as ``start`` does.
        """
        config = spec.config
        user_id, thread_id = str(config["user_id"]), str(config["thread_id"])
        strategy = str(config.get("multitask_strategy") or spec.graph.leases.strategy)
        if strategy in ("interrupt", "rollback") or spec.after_seconds > 0:
            return self.start(spec, assistant_id=assistant_id, metadata=metadata, kwargs=kwargs)
        await self.admit(spec)
        run_id = str(config.get("run_id") or uuid.uuid4())
        now = dt.datetime.now(dt.UTC).isoformat()
        record = RunRecord(
            run_id=run_id,
            thread_id=thread_id,
            user_id=user_id,
            assistant_id=assistant_id,
            multitask_strategy=strategy,
            metadata=dict(metadata or {}),
            kwargs=dict(kwargs or {}),
            log=EventLog(self.limits),
            graph=self.graph,
            created_at=now,
            updated_at=now,
        )  # what the answer shows; readers get a live record through ``locate``
        request = {
            "kwargs": pydantic_core.to_jsonable_python(dict(kwargs or {})),
            "delete_thread": spec.on_completion is not None,
            "held": False,
        }
        await self.queue.add(
            run_id=run_id,
            user_id=user_id,
            thread_id=thread_id,
            record=pydantic_core.to_jsonable_python(record.as_json()),
            request=request,
            owner=None,
        )
        return record

    async def thread_busy(self, user_id: str, thread_id: str) -> bool:
        """True while any worker has a run pending or running on the thread (its row says)."""
        return self.busy(user_id, thread_id) or any(
            not getattr(self._runs.get(run_id), "finished", False)
            for run_id in await self.queue.active(user_id, thread_id)
        )

    async def admit(self, spec: RunSpec) -> None:
        """``reject``: 409 while any worker has a run on the thread (not one that ended here)."""
        config = spec.config
        user_id, thread_id = str(config["user_id"]), str(config["thread_id"])
        if str(config.get("multitask_strategy") or spec.graph.leases.strategy) != "reject":
            return
        if await self.thread_busy(user_id, thread_id):
            raise ThreadBusyError(
                thread_id,
                "a run is pending or running on it; pass multitask_strategy 'enqueue' to wait "
                "for it, or 'interrupt' or 'rollback' to stop it",
            )

    async def submit_tool_results(
        self, record: RunRecord, results: list[dict[str, Any]]
    ) -> list[str]:
        """Apply them to a run held here; hand them to the holder of a run held elsewhere."""
        if record.run_id in self._held or record.finished:
            return await super().submit_tool_results(record, results)
        return await self.relay.send(record, results)

    async def _add(self, record: RunRecord, request: dict[str, Any]) -> None:
        try:
            await self.queue.add(
                run_id=record.run_id,
                user_id=record.user_id,
                thread_id=record.thread_id,
                record=pydantic_core.to_jsonable_python(record.as_json()),
                request=request,
                owner=self.worker_id,
            )
            self._rows.add(record.run_id)
        except Exception as exc:  # the run goes on here; it only loses its durability
            logger.warning(
                "run %s: not recorded in the run table (%s); it runs here only",
                record.run_id,
                exc,
                extra=self._extra(record),
            )

    def _new_log(self, run_id: str) -> EventLog:
        if self.events is None:
            return EventLog(self.limits)
        after = self._resumes.get(run_id, (1, 0))[1]
        return RedisStreamWriter(self.events, run_id, self.limits, start_after=after)

    def _attempt(self, run_id: str) -> int:
        return self._resumes.get(run_id, (1, 0))[0]

    async def _starting(self, record: RunRecord, spec: RunSpec) -> None:
        add = self._adds.get(record.run_id)
        if add is not None:  # shielded: a cancel of the run must not cancel its row's insert
            await asyncio.shield(add)
        try:
            stamp = await self._checkpointer().aversion(ThreadKey(record.thread_id, record.user_id))
            await self.queue.started(record.run_id, self.worker_id, stamp.version if stamp else 0)
        except Exception as exc:  # the run goes on; a resume after a crash re-runs its input
            logger.warning("run %s: start not recorded: %s", record.run_id, exc)

    async def _settled(self, record: RunRecord) -> None:
        """Write the outcome (or the hand-back) into the row before the stream's ``end``.

        So no reader on any worker sees ``end`` while the row says ``running``
        (``PgRunQueue.record_end`` retries for up to a lease while Postgres is away).
        """
        add = self._adds.pop(record.run_id, None)
        if add is not None:
            await asyncio.wait([add])
        if isinstance(record.log, RedisStreamWriter):
            try:
                await record.log.flushed()
            except Exception as exc:  # the row is the record; the events are the transport
                logger.warning("run %s: events not flushed: %s", record.run_id, exc)
        if record.run_id in self._rows:
            outcome = None if record.cancel_reason in _HANDED_BACK else record.status
            await self.queue.record_end(self.worker_id, record.run_id, outcome, record.output)
            self._rows.discard(record.run_id)

    async def _finish(self, record: RunRecord, spec: RunSpec) -> None:
        self._held.pop(record.run_id, None)
        if record.cancel_reason not in _HANDED_BACK and self.on_ended is not None:
            self.on_ended(record)
        await super()._finish(record, spec)
        logger.info("run %s ended %s", record.run_id, record.status, extra=self._extra(record))

    def _extra(self, record: RunRecord) -> dict[str, str]:
        """The fields of a log line about ``record`` (see ``_logging``)."""
        return {"run_id": record.run_id, "thread_id": record.thread_id, "worker": self.worker_id}

    def _checkpointer(self) -> Any:
        checkpointer = self.graph.checkpointer
        assert checkpointer is not None  # create_app refuses a graph without one
        return checkpointer

    # --- heartbeats and cancel across workers -----------------------------------------

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.queue.heartbeat_seconds)
            held = [r for r in self._held.values() if not r.finished and r.run_id in self._rows]
            try:
                answer = await self.queue.heartbeat(self.worker_id, [r.run_id for r in held])
            except Exception as exc:  # the next beat tries again; leases outlive a few misses
                logger.warning("worker %s: heartbeat failed: %s", self.worker_id, exc)
                continue
            for record in held:
                if record.finished:
                    continue
                if record.run_id not in answer:
                    self._lost(record)
                elif (asked := answer[record.run_id]) and record.cancel_reason is None:
                    action: CancelAction = "rollback" if asked == "rollback" else "interrupt"
                    self._spawn(super().cancel(record, action=action))

    def _lost(self, record: RunRecord) -> None:
        """Another worker took the run (this one stalled past its lease): stop it here."""
        logger.warning("run %s: lease lost; stopping it", record.run_id, extra=self._extra(record))
        self._give_up(record, "lease lost")

    def _give_up(self, record: RunRecord, reason: str) -> None:
        """Cancel the run's task where it awaits, as a crash would stop it, minus the wait.

        Not the graph's stop: a stopped run answers its unfinished tool calls
        "interrupted" when continued, while a run cut off like this leaves them
        to be started again by the worker that resumes it (the thread stays
        ``running``, its lease released). Its row is handed back, and its
        stream's ``end`` stays local (see ``RedisStreamWriter.hand_back``).
        """
        if isinstance(record.log, RedisStreamWriter):
            record.log.hand_back = True
        record.cancel_reason = reason
        self._cancel_task(record)

    async def cancel(
        self, record: RunRecord, *, action: CancelAction = "interrupt", wait: bool = False
    ) -> None:
        """Stop a run held here at once, or ask its holder elsewhere through its row."""
        if record.run_id in self._held or record.finished:
            await super().cancel(record, action=action, wait=wait)
            return
        row = await self.queue.request_cancel(record.run_id, action)
        if row is not None and row.status in FINISHED:  # nobody held it: ended here
            self._settle(record, row.status, row.output)
        if wait or action == "rollback":
            await record.done.wait()

    # --- runs of other workers --------------------------------------------------------

    async def locate(
        self, user_id: str, run_id: str, thread_id: str | None = None
    ) -> RunRecord | None:
        """A run held here, or a record of it that follows it in another worker."""
        local = self.get(user_id, run_id, thread_id)
        if local is not None:
            return local
        row = await self.queue.get(user_id, run_id)
        if row is None or (thread_id is not None and row.thread_id != thread_id):
            return None
        known = self._remote.get(run_id)
        if known is not None and not known.finished:
            self._follow_row(known, row)
            return known
        record = await self._follower(row)
        self._remote[run_id] = record
        while len(self._remote) > 1000:
            self._remote.popitem(last=False)
        return record

    def forget(self, record: RunRecord) -> None:
        """Drop a finished run here and its row (in the background)."""
        super().forget(record)
        if record.finished:
            self._remote.pop(record.run_id, None)
            self._spawn(self.queue.forget(record.run_id))

    async def locate_runs(
        self,
        user_id: str,
        thread_id: str,
        *,
        limit: int = 10,
        offset: int = 0,
        status: str | None = None,
    ) -> list[dict[str, Any]]:
        """The thread's runs from the run table (every worker's), newest first."""
        rows = await self.queue.list_runs(
            user_id, thread_id, limit=limit, offset=offset, status=status
        )
        out = []
        for row in rows:
            local = self.get(user_id, row.run_id, thread_id)
            out.append(local.as_json() if local is not None else row.as_json())
        return out

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
            created_at=str(data.get("created_at", "")),
            started=True,
        )
        if row.status in FINISHED:
            self._settle(record, row.status, row.output)
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
            self._settle(record, "error", {"__error__": {"error": "RunLost"}})
        elif row.status in FINISHED:
            self._settle(record, row.status, row.output)
        elif row.status != record.status:
            record.set_status("running" if row.status == "running" else "pending")

    @staticmethod
    def _settle(record: RunRecord, status: str, output: Any) -> None:
        record.output = output
        record.set_status(status)  # type: ignore[arg-type]
        record.done.set()

    # --- consumers --------------------------------------------------------------------

    async def _consume(self) -> None:
        """Claim runs no live worker holds, one at a time, and run them to their end."""
        while not self._closing:
            try:
                claim = await self.queue.claim(self.worker_id)
                self._claims_failing = False
            except Exception as exc:  # logged once per outage, retried at the next poll
                if not self._claims_failing:
                    logger.warning("worker %s: claim failed: %s", self.worker_id, exc)
                self._claims_failing, claim = True, None
            if claim is None:
                self._work.clear()
                with contextlib.suppress(TimeoutError):
                    wait = self.poll_seconds * (0.5 + random.random())
                    await asyncio.wait_for(self._work.wait(), wait)
                continue
            try:
                record = await self._run_claimed(claim)
            except Exception as exc:  # a row that cannot be run ends as an error, once
                logger.exception("run %s: could not be started: %s", claim.run_id, exc)
                error = {"__error__": {"error": type(exc).__name__, "message": str(exc)}}
                with contextlib.suppress(Exception):
                    await self.queue.finish(claim.run_id, self.worker_id, "error", error)
                continue
            if record is not None:
                await record.done.wait()

    async def _run_claimed(self, claim: ClaimedRun) -> RunRecord | None:
        """Start a claimed run again: continue its thread, or run its input, or just record it."""
        from tenxgraph.server._run_request import RunRequest, graph_input, run_config_of

        extra = {"run_id": claim.run_id, "thread_id": claim.thread_id, "worker": self.worker_id}
        if self._closing:
            await self.queue.release(self.worker_id, [claim.run_id])
            return None
        if claim.cancel:
            reason = {"__error__": {"error": "RunCancelled", "message": claim.cancel}}
            await self.queue.finish(claim.run_id, self.worker_id, "interrupted", reason)
            return None
        if claim.attempts > MAX_ATTEMPTS:  # its workers keep dying: do not take a third down
            message = f"its workers died {claim.attempts - 1} times while running it"
            error = {"__error__": {"error": "RunAbandoned", "message": message}}
            await self.queue.finish(claim.run_id, self.worker_id, "error", error)
            return None
        request = claim.request
        body = RunRequest.model_validate(
            {**request["kwargs"], "assistant_id": claim.record.get("assistant_id", "")}
        )
        config = run_config_of(body, claim.thread_id, claim.user_id)
        config.update(run_id=claim.run_id, multitask_strategy="enqueue")
        run_input = graph_input(body)
        if claim.base_version is not None:
            resume = await self._resume_point(claim)
            if resume is not None:  # the turn ended before its worker died: record it
                status, values = resume
                await self.queue.finish(claim.run_id, self.worker_id, status, values)
                return None
            if await self._input_saved(claim):
                run_input = None
                config.pop("checkpoint_id", None)  # its first save branched the thread already
        attempt = claim.attempts + (1 if request.get("held", True) else 0)
        start_after = await self.events.start_after(claim.run_id, attempt) if self.events else 0
        self._resumes[claim.run_id] = (attempt, start_after)
        logger.info("run %s: taken, attempt %d", claim.run_id, attempt, extra=extra)
        spec = RunSpec(
            graph=self.graph,
            input=run_input,
            config=config,
            stream_modes=body.modes(),
            encoder=self.encoder,
            invocation_state=dict(body.context) if body.context else None,
            on_completion=self._deleter(claim) if request.get("delete_thread") else None,
        )
        record = self.start(
            spec,
            assistant_id=str(claim.record.get("assistant_id", "")),
            metadata=claim.record.get("metadata"),
            kwargs=request["kwargs"],
        )
        record.created_at = str(claim.record.get("created_at", record.created_at))
        return record

    async def _input_saved(self, claim: ClaimedRun) -> bool:
        stamp = await self._checkpointer().aversion(ThreadKey(claim.thread_id, claim.user_id))
        return stamp is not None and stamp.version > (claim.base_version or 0)

    async def _resume_point(self, claim: ClaimedRun) -> tuple[str, Any] | None:
        """``(status, values)`` when the run's turn already ended; None when it must go on."""
        if not await self._input_saved(claim):
            return None
        config = {"thread_id": claim.thread_id, "user_id": claim.user_id}
        state = await self.graph.aget_state(config)
        if state is None:
            return None
        status = state.execution_meta.status
        if status in ("completed", "interrupted"):  # done, or paused for a human
            return ("success" if status == "completed" else "interrupted"), self.encoder.values(
                state
            )
        return None

    def _deleter(self, claim: ClaimedRun) -> Any:
        async def delete() -> None:
            await self._checkpointer().adelete_thread(ThreadKey(claim.thread_id, claim.user_id))

        return delete
