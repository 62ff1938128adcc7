"""Runs that survive their worker: the run registry of a server on Postgres (and Redis).

``DurableRunManager`` is the in-process ``RunRegistry`` (same records, logs,
cancel through the graph's stop) plus a row per run in ``PgRunQueue``. A
running run's only owner is its thread's lease:

- **A run starts where it was asked for (no hop).** Its row is added
  pending; when its turn comes the worker takes the thread's lease and marks
  the row ``running`` in one transaction (``take_thread`` with the queue's
  ``take``, so the multitask strategy is the runtime's: ``enqueue`` waits,
  ``interrupt`` and ``rollback`` end the thread's earlier pending rows and
  ask the running one to stop through its lease). The worker keeps that
  lease for the whole run, pauses included, renewing all its runs' leases
  in one statement (``LeaseBeat``), and hands it to the graph
  (``RunControl.lease_owner``), which leaves it held; the outcome is
  written to the row in the statement that lets the lease go.
- **Consumers**: one claim loop per worker (``ClaimLoop``) takes rows whose thread has
  no live lease, in batches, up to ``consumers`` runs at once, each an asyncio task:
  queued background runs, and ``running`` rows whose worker died (its lease expired) or
  handed them back (released it). A claimed run is **resumed**: if the thread moved past
  the version the first attempt began from, the input was saved and the run continues
  the thread (input None; the tool ledger keeps finished tools from running again); a
  turn that had ended is recorded; otherwise the input is run again.
- **Streams.** With Redis, each run's events also go to a Redis Stream
  (``_redis_events``), so ``locate`` answers a run held by another worker with a record
  whose log reads that stream.
- **Cancel** on any worker: a run held here is stopped at once; one held elsewhere is
  stopped through its thread's lease (``request_stop`` names the run, so a later run on
  the thread is not stopped), and a row that no live lease holds ends ``interrupted`` at
  once. Tool results for a run held elsewhere are a letter to the run (``_tool_relay``).
- **Shutdown** (``aclose``): stop claiming, let held runs finish for up to
  ``drain_seconds``, then cut the rest off and release their leases without ending their
  rows: another worker claims them at once.

As the registry in memory, this one imports neither the runtime nor a wire format: the
layer above gives it a ``RunTransport`` besides the ``RunParts`` (how a run's events are
shared across workers, how a claimed run's stored request becomes a run again, the
records that follow runs of other workers, and the relay of browser-side tool results).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import socket
import uuid
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import pydantic_core

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.runs._claim_loop import CONSUMERS, ClaimLoop
from tenxgraph.runs._lease_beat import LeaseBeat
from tenxgraph.runs._leases import ThreadLease, take_thread
from tenxgraph.runs._pg_queue import RunGone
from tenxgraph.runs._registry import (
    DRAIN_SECONDS,
    FINISHED,
    CancelAction,
    RunLog,
    RunParts,
    RunRecord,
    RunRegistry,
    RunSpec,
    RunTarget,
    busy_error,
)
from tenxgraph.runs._transport import RunTransport, settle

if TYPE_CHECKING:
    from tenxgraph.runs._pg_queue import ClaimedRun, PgRunQueue
    from tenxgraph.storage.checkpointer.base import Checkpointer

__all__ = ["DurableRunManager", "default_worker_id"]


logger = logging.getLogger("tenxgraph.server.runs")

MAX_ATTEMPTS = 5
"""Claims of one run after which it ends ``error`` instead of being run again."""
_HANDED_BACK = frozenset({"shutdown", "lease lost", "taken elsewhere"})
"""Cancel reasons of runs this worker gives up without ending them (another one runs them)."""


def default_worker_id() -> str:
    """The name of this process in the run table: host, pid and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class DurableRunManager(RunRegistry):
    """The run manager of one worker among several sharing a Postgres run table."""

    orders_in_memory = False  # the rows order a thread's runs, whichever worker holds them

    def __init__(
        self,
        graph: RunTarget,
        queue: PgRunQueue,
        parts: RunParts,
        transport: RunTransport,
        *,
        limits: Any = None,
        keep_finished: int = 10_000,
        keep_logs: int = 1_000,
        consumers: int = CONSUMERS,
        poll_seconds: float = 0.25,
        drain_seconds: float = DRAIN_SECONDS,
        worker_id: str | None = None,
        lease_seconds: float | None = None,
    ) -> None:
        """Run ``graph``'s runs, recorded in ``queue``, of ``parts``; ``transport`` links workers.

        ``lease_seconds``: the thread lease of the runs served (the graph's
        by default): how long a dead worker's run waits to be resumed.
        """
        super().__init__(parts, limits, keep_finished=keep_finished, keep_logs=keep_logs)
        self.graph, self.queue, self.transport = graph, queue, transport
        self.consumers, self.poll_seconds = consumers, poll_seconds
        self.drain_seconds = drain_seconds
        self.lease_seconds = lease_seconds or graph.leases.lease_seconds
        self.worker_id = worker_id or default_worker_id()
        self._held: dict[str, RunRecord] = {}
        self.relay = transport.relay(
            queue, self.worker_id, self._held.get, lambda: list(self._held)
        )
        self._adds: dict[str, asyncio.Task[None]] = {}
        """The row inserts of the runs started here, by run id."""
        self._last_add: dict[tuple[str, str], asyncio.Task[None]] = {}
        """The newest row insert per thread: a thread's rows go in the order its runs came."""
        self._rows: set[str] = set()
        """Held runs whose row is in the table (their outcome is recorded there)."""
        self._leases: dict[str, ThreadLease] = {}
        """The thread leases of the runs held here (taken with their rows, kept to their end)."""
        self._attempts: dict[str, int] = {}
        """Which attempt at each held run this worker makes (``finish`` is fenced by it)."""
        self._resumes: dict[str, tuple[int, int | None]] = {}
        """Claimed runs being started: run id -> (attempt, last event id published)."""
        self._background: set[asyncio.Task[Any]] = set()
        self.followers = transport.followers(queue, self.limits, poll_seconds, self._spawn)
        self._closing = False
        self.beat = LeaseBeat(queue, self.lease_seconds)  # renews the leases held here
        self.claims = ClaimLoop(
            lambda n: queue.claim_many(self.lease_seconds, n),
            self._serve_claimed,
            self._claimed_again,
            self._spawn,
            limit=consumers,
            poll_seconds=poll_seconds,
            name=self.worker_id,
        )
        """Takes queued runs, up to ``consumers`` at once."""
        self.on_ended: Callable[[RunRecord], None] | None = None
        """Called with each run this worker ended (``/metrics`` counts its latency)."""

    # --- lifecycle --------------------------------------------------------------------

    async def open(self) -> None:
        """Start listening and the consumers (server startup)."""
        channels = {
            self.queue.channel: lambda _: self.claims.wake(),
            self.queue.mail.channel: self.relay.mail_came,
            self.relay.channel: self.relay.notified,
        }
        self._spawn(self.queue.listen(channels))
        self._spawn(self.relay.serve())
        self._spawn(self.claims.run())
        logger.info("worker %s: taking runs (%d at once)", self.worker_id, self.consumers)

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        self._background.add(task := asyncio.get_running_loop().create_task(coroutine))
        task.add_done_callback(self._background.discard)
        return task

    async def aclose(self, grace: float = DRAIN_SECONDS) -> None:
        """Graceful shutdown: stop claiming, drain, hand the rest back, close connections."""
        self._closing = self.claims.closing = True
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
        await self.beat.aclose()
        await self.queue.aclose()
        await self.transport.aclose()

    # --- hooks of RunRegistry ----------------------------------------------------------

    def start(
        self,
        spec: RunSpec,
        *,
        assistant_id: str,
        metadata: Any = None,
        kwargs: Any = None,
    ) -> RunRecord:
        """Start the run here (no hop), its row added pending until its turn comes."""
        resumed = str(spec.config.get("run_id") or "") in self._resumes
        spec.config["lease_seconds"] = self.lease_seconds
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
            thread = (record.user_id, record.thread_id)
            add = asyncio.get_running_loop().create_task(
                self._add(record, request, spec.after_seconds, self._last_add.get(thread))
            )
            self._adds[record.run_id] = self._last_add[thread] = add
            add.add_done_callback(lambda done: self._added(thread, done))
        return record

    def _added(self, thread: tuple[str, str], add: asyncio.Task[None]) -> None:
        if self._last_add.get(thread) is add:
            del self._last_add[thread]

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
            log=self.parts.new_log(run_id, self.limits),
            graph=self.graph,
            control=self.parts.new_handle(run_id),
            remote=self.parts.new_remote(),
            created_at=now,
            updated_at=now,
        )  # what the answer shows; readers get a live record through ``locate``
        request = {
            "kwargs": pydantic_core.to_jsonable_python(dict(kwargs or {})),
            "delete_thread": spec.on_completion is not None,
        }
        before = self._last_add.get((user_id, thread_id))
        if before is not None:  # a run started here just before: its row goes first
            await asyncio.wait([before])
        await self.queue.add(
            run_id=run_id,
            user_id=user_id,
            thread_id=thread_id,
            record=pydantic_core.to_jsonable_python(record.as_json()),
            request=request,
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
            raise busy_error(thread_id, "a run is pending or running on it")

    async def submit_tool_results(
        self, record: RunRecord, results: list[dict[str, Any]]
    ) -> list[str]:
        """Apply them to a run held here; hand them to the holder of a run held elsewhere."""
        if record.run_id in self._held or record.finished:
            return await super().submit_tool_results(record, results)
        return await self.relay.send(record, results)

    async def _add(
        self,
        record: RunRecord,
        request: dict[str, Any],
        after_seconds: float,
        before: asyncio.Task[None] | None,
    ) -> None:
        """Add the run's row, after the row of the thread's run started here just before.

        Consumers leave it to this worker until ``after_seconds`` plus the
        queue's ``reserve_seconds`` passed (each try to start it pushes that
        further while it waits for its thread).
        """
        if before is not None:
            await asyncio.wait([before])
        try:
            await self.queue.add(
                run_id=record.run_id,
                user_id=record.user_id,
                thread_id=record.thread_id,
                record=pydantic_core.to_jsonable_python(record.as_json()),
                request=request,
                run_after=after_seconds + self.queue.reserve_seconds,
            )
            self._rows.add(record.run_id)
        except Exception as exc:  # the run goes on here; it only loses its durability
            logger.warning(
                "run %s: not recorded in the run table (%s); it runs here only",
                record.run_id,
                exc,
                extra=self._extra(record),
            )

    def _new_log(self, run_id: str) -> RunLog:
        after = self._resumes.get(run_id, (1, 0))[1]
        return self.transport.log(run_id, self.limits, after)

    def _attempt(self, run_id: str) -> int:
        return self._resumes.get(run_id, (1, 0))[0]

    async def _starting(self, record: RunRecord, spec: RunSpec) -> None:
        """Take the thread and mark the row running in one go (a claimed run holds both already).

        Raises ``CancelledError`` when the row was stopped meanwhile, or
        claimed by another worker (the run then goes on there).
        """
        lease = self._leases.get(record.run_id)  # a claimed run's, beating since its claim
        if lease is None:
            add = self._adds.get(record.run_id)
            if add is not None:  # shielded: a cancel of the run must not cancel its row's insert
                await asyncio.shield(add)
            if record.run_id not in self._rows:  # not recorded (Postgres away): the graph takes it
                return
            try:
                lease = await self._take(record, spec)
            except RunGone as gone:  # stopped, or (rarely) claimed by another worker meanwhile
                moved = gone.status == "running"
                record.cancel_reason = "taken elsewhere" if moved else "interrupt"
                raise asyncio.CancelledError from None
            self._leases[record.run_id] = lease
            self.beat.add(lease)
        record.control.lease_owner = lease.owner
        record.control.lease_stamp = lease.stamp  # read with the lease: the run asks no more
        lease.on_stop = lambda request: self._stop_held(record, request)

    async def _take(self, record: RunRecord, spec: RunSpec) -> ThreadLease:
        """Take the run's thread by its strategy, marking its row running in the same go."""
        key = ThreadKey(record.thread_id, record.user_id)
        policy = self.graph.leases.for_run(spec.config)
        if policy.strategy in ("interrupt", "rollback"):
            await self.queue.displace(record.user_id, record.thread_id, record.run_id)

        async def take(key: ThreadKey, owner: str, seconds: float) -> Any:
            holder, stamp, attempts = await self.queue.take(record.run_id, key, owner, seconds)
            if holder is None:
                self._attempts[record.run_id] = attempts
            return holder, stamp

        return await take_thread(self._checkpointer(), key, record.run_id, policy, take=take)

    def _stop_held(self, record: RunRecord, request: str) -> None:
        """A stop request on the run's lease (a cancel from any worker, or a newer run)."""
        if record.finished:
            return
        if request == "lost":  # another worker took the run again: stop here, record nothing
            self._lost(record)
        elif record.cancel_reason is None:
            action: CancelAction = "rollback" if request == "rollback" else "interrupt"
            if record.started and not record.remote.waiting:  # in the graph, which acts on it
                record.cancel_reason = action  # (a rollback discards its own turn before it ends)
                record.control.stop(action)
            else:
                self._spawn(super().cancel(record, action=action))

    async def _settled(self, record: RunRecord) -> None:
        """Write the outcome into the row before the stream's ``end``, giving the lease up in it.

        So no reader on any worker sees ``end`` while the row says ``running``, and no worker
        claims the run between its end and its record (``PgRunQueue.record_end`` waits out a
        Postgres outage). A run handed back keeps its row ``running``: its released lease
        makes it claimable at once.
        """
        try:
            await self.transport.flushed(record.log)
        except Exception as exc:  # the row is the record; the events are the transport
            logger.warning("run %s: events not flushed: %s", record.run_id, exc)
        add = self._adds.pop(record.run_id, None)
        if add is not None:  # a run stopped before its turn: its row is ended, not left pending
            await asyncio.wait([add])
        attempt = self._attempts.pop(record.run_id, 0)
        if record.run_id in self._rows and record.cancel_reason not in _HANDED_BACK:
            lease = self._leases.get(record.run_id)  # given up in the same statement
            ending = partial(self.queue.record_end, record.run_id, attempt, record.status)
            ending = partial(ending, record.output)
            await (ending(None) if lease is None else lease.release_with(ending))
        self._rows.discard(record.run_id)
        lease = self._leases.pop(record.run_id, None)
        if lease is not None:
            await lease.release()
            if record.cancel_reason == "shutdown":
                await self.queue.handed_back()

    async def _finish(self, record: RunRecord, spec: RunSpec) -> None:
        self._held.pop(record.run_id, None)
        if record.cancel_reason not in _HANDED_BACK and self.on_ended is not None:
            self.on_ended(record)
        await super()._finish(record, spec)
        if record.cancel_reason in _HANDED_BACK:  # it goes on elsewhere: its row answers for it
            RunRegistry.forget(self, record)
            return
        if record.cancel_reason == "rollback":  # its turn is gone: so is the run, on every worker
            await self.aforget(record)
        logger.info("run %s ended %s", record.run_id, record.status, extra=self._extra(record))

    def _extra(self, record: RunRecord | ClaimedRun) -> dict[str, str]:
        """The fields of a log line about ``record`` (see ``_logging``)."""
        return {"run_id": record.run_id, "thread_id": record.thread_id, "worker": self.worker_id}

    def _checkpointer(self) -> Checkpointer:
        checkpointer = self.graph.checkpointer
        assert checkpointer is not None  # a served graph has one
        return checkpointer

    # --- stopping across workers -----------------------------------------------------

    def _lost(self, record: RunRecord) -> None:
        """Another worker took the run (this one stalled past its lease): stop it here."""
        logger.warning("run %s: lease lost; stopping it", record.run_id, extra=self._extra(record))
        self._give_up(record, "lease lost")

    def _give_up(self, record: RunRecord, reason: str) -> None:
        """Cancel the run's task where it awaits, as a crash would stop it, minus the wait.

        Not the graph's stop: a stopped run answers its unfinished tool calls
        "interrupted" when continued, while a run cut off like this leaves them
        to be started again by the worker that resumes it (the thread stays
        ``running``). Its lease is released with its row left ``running``
        (handed back), and its stream's ``end`` stays local (see
        ``RedisStreamWriter.hand_back``).
        """
        self.transport.hand_back(record.log)
        record.cancel_reason = reason
        self._cancel_task(record)

    async def cancel(
        self, record: RunRecord, *, action: CancelAction = "interrupt", wait: bool = False
    ) -> None:
        """Stop a run held here at once, or one held elsewhere through its thread's lease."""
        if record.run_id in self._held or record.finished:
            await super().cancel(record, action=action, wait=wait)
            return
        row = await self.queue.request_stop(record.run_id, action)
        if row is not None and row.status in FINISHED:  # nobody held it: ended here
            settle(record, row.status, row.output)
        if wait or action == "rollback":
            await record.done.wait()
        if action == "rollback":  # its holder discarded the turn and deleted the row: so here
            await self.aforget(record)

    # --- runs of other workers --------------------------------------------------------

    async def locate(
        self, user_id: str, run_id: str, thread_id: str | None = None
    ) -> RunRecord | None:
        """A run held here, or a record of it that follows it in another worker."""
        local = self.get(user_id, run_id, thread_id)
        if local is not None:
            return local
        return await self.followers.locate(user_id, run_id, thread_id)

    async def aforget(self, record: RunRecord) -> None:
        """Drop a finished run here and its row, returning once the row is gone."""
        super().forget(record)
        if record.finished:
            self.followers.forget(record.run_id)
            await self.queue.forget(record.run_id)

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

    # --- consumers --------------------------------------------------------------------

    async def _serve_claimed(self, claim: ClaimedRun) -> None:
        """Run one claimed run to its end, or record how it ended, or hand it back."""
        lease = self._claimed_lease(claim)
        try:
            record = await self._run_claimed(claim)
        except Exception as exc:  # a row that cannot be run ends as an error, once
            logger.exception("run %s: could not be started: %s", claim.run_id, exc)
            error = {"__error__": {"error": type(exc).__name__, "message": str(exc)}}
            await self._end_claimed(claim, "error", error)
            return
        if record is not None:
            await record.done.wait()
        elif self._leases.pop(claim.run_id, None) is lease:
            await lease.release()
            await self.queue.handed_back()

    def _claimed_again(self, run_id: str) -> None:
        """Stop the run here: this worker stalled past its lease and claimed it again."""
        if (held := self._held.get(run_id)) is not None:
            self._lost(held)

    def _claimed_lease(self, claim: ClaimedRun) -> ThreadLease:
        """The thread lease the claim took, kept alive from now on (a heartbeat, stop requests)."""
        assert claim.lease_owner is not None
        lease = ThreadLease(self._checkpointer(), claim.key, claim.lease_owner, self.lease_seconds)
        lease.stamp = claim.stamp
        self.beat.add(lease)  # its stop requests reach the run once it started (``_starting``)
        self._leases[claim.run_id] = lease
        self._attempts[claim.run_id] = claim.attempts
        return lease

    async def _end_claimed(self, claim: ClaimedRun, status: str, output: Any) -> None:
        """Record how a claimed run ended without running it, and let its thread go."""
        with contextlib.suppress(Exception):
            await self.queue.finish(claim.run_id, claim.attempts, status, output)
        self._attempts.pop(claim.run_id, None)
        lease = self._leases.pop(claim.run_id, None)
        if lease is not None:
            await lease.release()

    async def _run_claimed(self, claim: ClaimedRun) -> RunRecord | None:
        """Start a claimed run again: continue its thread, or run its input, or just record it."""
        if self._closing:  # handed back: ``_serve_claimed`` releases the lease
            return None
        if claim.attempts > MAX_ATTEMPTS:  # its workers keep dying: do not take a third down
            message = f"its workers died {claim.attempts - 1} times while running it"
            error = {"__error__": {"error": "RunAbandoned", "message": message}}
            await self._end_claimed(claim, "error", error)
            return None
        spec = await self.transport.resume(claim)
        if not isinstance(spec, RunSpec):  # the turn ended before its worker died: record it
            await self._end_claimed(claim, *spec)
            return None
        attempt = claim.attempts
        start_after = await self.transport.start_after(claim.run_id, attempt)
        if not self.claims.newest(claim.run_id):  # claimed again meanwhile: that claim runs it
            return None
        self._resumes[claim.run_id] = (attempt, start_after)
        logger.info("run %s: taken, attempt %d", claim.run_id, attempt, extra=self._extra(claim))
        record = self.start(
            spec,
            assistant_id=str(claim.record.get("assistant_id", "")),
            metadata=claim.record.get("metadata"),
            kwargs=claim.request["kwargs"],
        )
        record.created_at = str(claim.record.get("created_at", record.created_at))
        return record
