"""The run registry: start runs, order them per thread, stop them, and remember how they ended.

A run is a ``RunRecord`` (what an API shows: id, thread, status...) and a
log of what its stream sent. ``RunRegistry.start`` admits a run on its
thread according to its ``multitask_strategy`` and starts it as an asyncio
task; every reader (the request that streams it, ``join``, a client that
reconnects) reads the run's log, never the graph. This is the registry in
memory, for one process; ``DurableRunManager`` (``_durable``) is the one over the
Postgres run queue (``PgRunQueue``), for several workers.

**What a run is made of is given, not imported.** This floor sits below the
runtime and the server: it never imports ``tenxgraph.core.graph`` nor a
wire format. A ``RunParts`` gives the registry what it needs: the log a new
run writes (``new_log``), the handle that stops it (``new_handle``, the
runtime's ``RunControl``), what it waits for from a browser
(``new_remote``), and ``open_writer``, which runs the graph into the log
(the server's, which encodes the runtime's events for its wire format).
The graph itself is a ``RunTarget``: its lease policy and its ``arollback``.

Across processes the thread's lease already orders runs (the strategy is
passed to the graph); the in-process table below only makes the common case
exact and immediate (a ``reject`` answered before anything starts, a queue
kept in order).

Finished runs are kept, so ``join``, ``get`` and a late stream reader still
find them: the records of the newest ``keep_finished``, the stream events
of the newest ``keep_logs`` (a replay of an older one is answered 410).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tenxgraph.errors import ThreadBusyError
from tenxgraph.runs._leases import LeasePolicy
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadStamp

__all__ = [
    "DRAIN_SECONDS",
    "FINISHED",
    "CancelAction",
    "Encoder",
    "RemoteWaits",
    "RunHandle",
    "RunLog",
    "RunParts",
    "RunRecord",
    "RunRegistry",
    "RunSpec",
    "RunStatus",
    "RunTarget",
    "RunWriter",
    "busy_error",
]

logger = logging.getLogger("tenxgraph.server.runs")

RunStatus = Literal["pending", "running", "error", "success", "timeout", "interrupted"]
"""A run's status, as LangGraph's API names them."""


CancelAction = Literal["interrupt", "rollback"]
FINISHED = frozenset({"error", "success", "timeout", "interrupted"})
DRAIN_SECONDS = 5.0
"""Shutdown (SIGTERM) waits this long for open requests, then as long for runs to end
(``aclose``'s ``grace``): runs still going are then stopped, or handed back on Postgres."""


def busy_error(thread_id: str, what: str) -> ThreadBusyError:
    """``reject``'s refusal (409): ``what`` is on the thread; the strategies that get past it."""
    return ThreadBusyError(
        thread_id,
        f"{what}; pass multitask_strategy 'enqueue' to wait for it, or 'interrupt' or "
        "'rollback' to stop it",
    )


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


class RunTarget(Protocol):
    """What the registry needs of a graph: its lease policy, and discarding an unfinished turn."""

    @property
    def leases(self) -> LeasePolicy:
        """How its runs hold threads (the default ``multitask_strategy``)."""
        ...

    @property
    def checkpointer(self) -> Checkpointer | None:
        """Where its threads are kept (and their leases)."""
        ...

    async def arollback(self, config: Mapping[str, Any]) -> Any:
        """Discard the thread's unfinished turn."""
        ...


class RunLog(Protocol):
    """The events a run's stream sent, for every reader."""

    def append(self, event: str, data: str) -> Any:
        """Add an event (its data already encoded)."""
        ...

    def discard(self) -> None:
        """Drop the events kept (a replay is refused from then on)."""
        ...


class RunHandle(Protocol):
    """How a running run is stopped (the runtime's ``RunControl``)."""

    lease_owner: str | None
    lease_stamp: ThreadStamp | None

    def stop(self, request: str = "interrupt") -> None:
        """Stop at the next step (``interrupt``, or ``rollback``: discard the turn)."""
        ...


class RemoteWaits(Protocol):
    """The browser-side tool calls a run waits for."""

    @property
    def waiting(self) -> bool:
        """True while the run waits for results."""
        ...

    def submit(self, results: list[dict[str, Any]]) -> list[str]:
        """Take results; the calls still pending."""
        ...


class Encoder(Protocol):
    """Encodes an event's data for the log."""

    def dumps(self, value: Any) -> str:
        """``value`` as the log's text."""
        ...


class RunWriter(Protocol):
    """Runs the graph of one run into its log (the server's, in its wire format)."""

    @property
    def output(self) -> Any:
        """The final state values, or ``{"__error__": ...}`` once it failed."""
        ...

    async def run(self, record: RunRecord, spec: RunSpec) -> RunStatus:
        """Run to the end; the status (a failure is logged, then raised)."""
        ...

    def cancelled(self, reason: str) -> None:
        """The run's task was cancelled (``reason``): log that."""
        ...

    def end(self) -> None:
        """The run ended: close the log for its readers."""
        ...


@dataclass(frozen=True, slots=True)
class RunParts:
    """What the registry makes runs of: given by the layer above (the server)."""

    new_log: Callable[[str, Any], RunLog]
    """``(run_id, limits)``: the log of a new run."""
    new_handle: Callable[[str], RunHandle]
    """``run_id``: the handle that stops the run (``RunControl(run_id, None)``)."""
    new_remote: Callable[[], RemoteWaits]
    """The browser-side calls the run will wait for."""
    open_writer: Callable[[RunRecord, RunSpec], RunWriter]
    """What runs the graph into the log."""


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What to run: the graph, its input and config, and what the stream carries."""

    graph: RunTarget
    input: Mapping[str, Any] | None
    """The graph's input (``messages``, ``state``, ``resume``), None to continue the thread."""
    config: dict[str, Any]
    """The run config: ``thread_id``, ``user_id``, ``run_id`` and what the client set."""
    stream_modes: tuple[str, ...]
    encoder: Encoder
    stream_subgraphs: bool = False
    """The stream carries the subgraphs' events too, named ``updates|research``."""
    invocation_state: dict[str, Any] | None = None
    """The request's ``context``, given to tools and hooks."""
    after_seconds: float = 0.0
    on_completion: Callable[[], Awaitable[None]] | None = None
    """Called when the run ended (a stateless run deletes its thread)."""


@dataclass(slots=True, eq=False)
class RunRecord:
    """One run as the API shows it, with its stream log and completion."""

    run_id: str
    thread_id: str
    user_id: str
    assistant_id: str
    multitask_strategy: str
    metadata: dict[str, Any]
    kwargs: dict[str, Any]
    log: RunLog
    graph: RunTarget = field(repr=False)
    control: RunHandle = field(repr=False)
    """The run's handle, given to the graph: its ``stop`` reaches the run wherever it is."""
    remote: RemoteWaits = field(repr=False)
    """The browser-side tool calls the run waits for."""
    status: RunStatus = "pending"
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    output: Any = None
    """The final state values (``join``, ``wait``), or ``{"__error__": ...}`` when it failed."""
    cancel_reason: str | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    entered: bool = False
    """True once the task began: cancelling it earlier would skip its ending (never settled)."""
    started: bool = False
    """True once the graph was called (a cancel then goes through ``control``)."""

    @property
    def finished(self) -> bool:
        """True once the run ended, however it ended."""
        return self.status in FINISHED

    def as_json(self) -> dict[str, Any]:
        """The run as LangGraph's API returns it."""
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "status": self.status,
            "metadata": self.metadata,
            "multitask_strategy": self.multitask_strategy,
            "kwargs": self.kwargs,
            "cancel_reason": self.cancel_reason,
        }

    def set_status(self, status: RunStatus) -> None:
        self.status, self.updated_at = status, _now()


class RunRegistry:
    """The runs of one process: started as tasks, ordered per thread, kept a while."""

    orders_in_memory = True
    """An ``enqueue`` run waits here for the earlier runs of its thread started here (the
    durable registry orders them by their rows instead)."""

    def __init__(
        self,
        parts: RunParts,
        limits: Any = None,
        *,
        keep_finished: int = 10_000,
        keep_logs: int = 1_000,
    ) -> None:
        """``limits`` are what ``parts.new_log`` bounds a run's log by (the server's)."""
        self.parts = parts
        self.limits = limits
        self.keep_finished = keep_finished
        """Finished runs whose records are kept (``get``, ``join``); older ones are a 404."""
        self.keep_logs = keep_logs
        """Finished runs whose stream events are kept; older ones answer a replay with 410."""
        self._runs: dict[str, RunRecord] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._logged: deque[str] = deque()
        self._threads: dict[tuple[str, str], list[RunRecord]] = {}
        """Per (user, thread): the runs not finished yet, in the order they came."""

    # --- starting ---------------------------------------------------------------------

    def start(
        self,
        spec: RunSpec,
        *,
        assistant_id: str,
        metadata: Mapping[str, Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        """Admit a run on its thread by its strategy, start it, and return its record.

        Raises ``ThreadBusyError`` (409) for ``reject`` while another run of
        this process is on the thread; ``interrupt`` and ``rollback`` cancel
        the waiting runs and stop the running one (through the graph's lease,
        which also reaches a run in another process); ``enqueue`` waits for
        the runs before it.
        """
        config = spec.config
        user_id, thread_id = str(config["user_id"]), str(config["thread_id"])
        strategy = str(config.get("multitask_strategy") or spec.graph.leases.strategy)
        ahead = [run for run in self._threads.get((user_id, thread_id), []) if not run.finished]
        if ahead and strategy == "reject":
            raise busy_error(thread_id, f"run {ahead[-1].run_id} is {ahead[-1].status} on it")
        run_id = str(config.get("run_id") or uuid.uuid4())
        config["run_id"] = run_id
        now = _now()
        record = RunRecord(
            run_id=run_id,
            thread_id=thread_id,
            user_id=user_id,
            assistant_id=assistant_id,
            multitask_strategy=strategy,
            metadata=dict(metadata or {}),
            kwargs=dict(kwargs or {}),
            log=self._new_log(run_id),
            graph=spec.graph,
            control=self.parts.new_handle(run_id),
            remote=self.parts.new_remote(),
            created_at=now,
            updated_at=now,
        )
        attempt = self._attempt(run_id)
        record.log.append("metadata", spec.encoder.dumps({"run_id": run_id, "attempt": attempt}))
        if strategy in ("interrupt", "rollback"):
            self._displace(ahead, strategy)
            ahead = []
        self._runs[run_id] = record
        self._threads.setdefault((user_id, thread_id), []).append(record)
        waits = ahead if strategy == "enqueue" and self.orders_in_memory else []
        record.task = asyncio.get_running_loop().create_task(self._execute(record, spec, waits))
        return record

    async def enqueue(
        self,
        spec: RunSpec,
        *,
        assistant_id: str,
        metadata: Mapping[str, Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        """A background run: here, ``start``; a durable queue lets any worker take it."""
        return self.start(spec, assistant_id=assistant_id, metadata=metadata, kwargs=kwargs)

    async def admit(self, spec: RunSpec) -> None:
        """Refuse a run before it starts (``ThreadBusyError``); ``start`` checks this process.

        The durable registry also reads the run table: a ``reject`` run on a
        thread busy in another worker is refused here, not failed once started.
        """

    async def submit_tool_results(
        self, record: RunRecord, results: list[dict[str, Any]]
    ) -> list[str]:
        """Hand browser-side tool results to the run; the calls it still waits for."""
        return record.remote.submit(results)

    async def _execute(self, record: RunRecord, spec: RunSpec, ahead: list[RunRecord]) -> None:
        """The worker: wait for its turn, run the graph into the log, record how it ended."""
        writer = self.parts.open_writer(record, spec)
        record.entered = True
        try:
            if record.cancel_reason is not None:  # displaced or stopped before its task began
                raise asyncio.CancelledError
            if spec.after_seconds > 0:
                await asyncio.sleep(spec.after_seconds)
            for earlier in ahead:
                await earlier.done.wait()
            await self._starting(record, spec)
            record.set_status("running")
            record.started = True
            status = await writer.run(record, spec)
            record.output = writer.output
            record.set_status(self._cancelled_as(record) or status)
        except asyncio.CancelledError:
            writer.cancelled(record.cancel_reason or "cancelled")
            record.output = writer.output
            record.set_status("interrupted")
        except Exception as exc:  # the writer logged it as the stream's error event
            record.output = writer.output
            record.set_status(self._cancelled_as(record) or "error")
            if record.status == "error":
                logger.info("run %s failed: %s: %s", record.run_id, type(exc).__name__, exc)
        finally:
            await self._settled(record)
            writer.end()
            await self._finish(record, spec)

    # --- hooks of the durable queue (``_durable``); nothing to do in one process ---

    def _new_log(self, run_id: str) -> RunLog:
        """The log of a new run's stream events."""
        return self.parts.new_log(run_id, self.limits)

    def _attempt(self, run_id: str) -> int:
        """Which attempt at the run this is (its stream's ``metadata`` says it)."""
        return 1

    async def _starting(self, record: RunRecord, spec: RunSpec) -> None:
        """The run's turn came (its waits are over); the graph is called next."""

    async def _settled(self, record: RunRecord) -> None:
        """The run's final status is set; its stream's ``end`` goes out next.

        The durable registry records the outcome in the run's row here, so a
        reader on any worker who saw ``end`` reads the final status.
        """

    @staticmethod
    def _cancelled_as(record: RunRecord) -> RunStatus | None:
        """A run stopped by a cancel or a newer run ended ``interrupted``, however it ended."""
        return "interrupted" if record.cancel_reason is not None else None

    async def _finish(self, record: RunRecord, spec: RunSpec) -> None:
        key = (record.user_id, record.thread_id)
        queue = self._threads.get(key, [])
        if record in queue:
            queue.remove(record)
        if not queue:
            self._threads.pop(key, None)
        record.done.set()
        if spec.on_completion is not None:
            try:
                await spec.on_completion()
            except Exception as exc:  # the run's outcome stands; the cleanup is logged
                logger.warning("run %s: cleanup failed: %s", record.run_id, exc)
        self._finished[record.run_id] = None
        while len(self._finished) > self.keep_finished:
            old, _ = self._finished.popitem(last=False)
            self._runs.pop(old, None)
        self._logged.append(record.run_id)
        while len(self._logged) > self.keep_logs:
            kept = self._runs.get(self._logged.popleft())
            if kept is not None:
                kept.log.discard()
        if record.cancel_reason == "rollback":  # rolled back (a cancel or a newer run): deleted,
            self.forget(record)  # as LangGraph deletes it; its turn is gone too

    # --- reading ----------------------------------------------------------------------

    def get(self, user_id: str, run_id: str, thread_id: str | None = None) -> RunRecord | None:
        """The run ``run_id`` of ``user_id`` (on ``thread_id`` when given); None if unknown."""
        record = self._runs.get(run_id)
        if record is None or record.user_id != user_id:
            return None
        if thread_id is not None and record.thread_id != thread_id:
            return None
        return record

    async def locate(
        self, user_id: str, run_id: str, thread_id: str | None = None
    ) -> RunRecord | None:
        """As ``get``, for a run that may live in another worker (see ``_durable``)."""
        return self.get(user_id, run_id, thread_id)

    async def locate_runs(
        self,
        user_id: str,
        thread_id: str,
        *,
        limit: int = 10,
        offset: int = 0,
        status: str | None = None,
    ) -> list[dict[str, Any]]:
        """As ``list_runs``, as the API shows them, with the runs of other workers too."""
        runs = self.list_runs(user_id, thread_id, limit=limit, offset=offset, status=status)
        return [run.as_json() for run in runs]

    def list_runs(
        self,
        user_id: str,
        thread_id: str,
        *,
        limit: int = 10,
        offset: int = 0,
        status: str | None = None,
    ) -> list[RunRecord]:
        """The thread's runs kept here, newest first."""
        runs = [
            run
            for run in reversed(self._runs.values())
            if run.user_id == user_id
            and run.thread_id == thread_id
            and (status is None or run.status == status)
        ]
        return runs[offset : offset + limit]

    def unfinished(self, user_id: str) -> list[RunRecord]:
        """The user's runs that are pending or running, oldest first."""
        return [r for r in self._runs.values() if r.user_id == user_id and not r.finished]

    def forget(self, record: RunRecord) -> None:
        """Drop a finished run's record and log."""
        if record.finished:
            self._runs.pop(record.run_id, None)
            self._finished.pop(record.run_id, None)

    async def aforget(self, record: RunRecord) -> None:
        """``forget``, returning once the run is gone wherever it was kept."""
        self.forget(record)

    def busy(self, user_id: str, thread_id: str) -> bool:
        """True while a run of this process is pending or running on the thread."""
        return any(not run.finished for run in self._threads.get((user_id, thread_id), []))

    async def thread_busy(self, user_id: str, thread_id: str) -> bool:
        """True while a run is pending or running on the thread (any worker's, when durable)."""
        return self.busy(user_id, thread_id)

    async def join(self, record: RunRecord) -> Any:
        """Wait for the run to end; its output (final values, or an ``__error__``)."""
        await record.done.wait()
        return record.output

    # --- stopping ---------------------------------------------------------------------

    async def cancel(
        self,
        record: RunRecord,
        *,
        action: CancelAction = "interrupt",
        wait: bool = False,
    ) -> None:
        """Stop a run: a waiting one never starts, a running one stops at its next step.

        ``interrupt`` keeps the turn so far (the thread is ``stopped``);
        ``rollback`` then discards the unfinished turn, as the graph's
        ``rollback`` does, and forgets the run. With ``wait`` the call returns once the run ended.
        """
        if record.finished:
            return
        record.cancel_reason = action
        self._stop(record)
        if action == "rollback":  # the turn is discarded and the run deleted, as LangGraph does
            await record.done.wait()
            config = {"thread_id": record.thread_id, "user_id": record.user_id}
            await record.graph.arollback(config)
            await self.aforget(record)
        elif wait:
            await record.done.wait()

    def _displace(self, ahead: list[RunRecord], strategy: str) -> None:
        """A newer run takes the thread: waiting runs never start, the running one stops.

        ``interrupt`` keeps the stopped run's turn so far; ``rollback`` makes
        it discard its unfinished turn (as a stop request through the
        thread's lease does for a run held by another process).
        """
        for earlier in ahead:
            earlier.cancel_reason = strategy
            self._stop(earlier, strategy)

    def _stop(self, record: RunRecord, request: str = "interrupt") -> None:
        """Stop a run through its handle; cancel its task only where it waits outside the graph.

        The task is cancelled only while the run waits for its turn or for a
        browser's results: cancelled inside the graph, say while it takes its
        thread's lease, the lease could stay taken. The handle reaches the
        run at any point from before the graph takes the thread.
        """
        if record.task is None or record.finished:
            return
        if record.started and not record.remote.waiting:
            record.control.stop(request)
        else:
            self._cancel_task(record)

    @staticmethod
    def _cancel_task(record: RunRecord) -> None:
        """Cancel the run's task; one that has not begun settles itself as it begins."""
        if record.task is not None and record.entered:
            record.task.cancel()

    async def aclose(self, grace: float = DRAIN_SECONDS) -> None:
        """Stop every run (server shutdown): each stops at its next step, saved ``stopped``.

        A run still going after ``grace`` seconds (a sync node that does not
        return) is cancelled; its thread is then continued by its next run.
        """
        tasks = []
        for record in list(self._runs.values()):
            if record.finished or record.task is None:
                continue
            record.cancel_reason = "shutdown"
            self._stop(record)
            tasks.append(record.task)
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=grace)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=grace)
