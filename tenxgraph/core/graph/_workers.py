"""Threads for user code (sync nodes, tools, routers), kept apart from storage I/O.

Python cannot stop a thread, so a sync tool that times out keeps its thread
until the function returns, possibly never. When such calls borrowed the
event loop's default executor, which SQLite's I/O and other libraries use
too, a handful of stuck tools made every later save wait behind them.

So each compiled graph runs user code on its own ``WorkerPool``: at most
``max_threads`` daemon threads, started on demand. A call whose caller gave
up (a timeout or a cancelled run) while it was running counts as *stuck*
until it returns; ``stuck`` and ``threads`` are visible on the pool. When
every thread is held by a stuck call, a new call fails at once with
``WorkersExhaustedError`` instead of queueing behind them forever, and so do
the calls still queued when the last thread becomes stuck. The threads are
daemons, so a tool that never returns does not keep the process alive at
exit.

A call's ``run_limit`` counts from the moment a thread starts it, not from
when it was queued: on a busy machine a new thread may take a while to be
scheduled, and a call that never ran must not be reported as having run
out of time (nor be dropped uncounted while its thread starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

from tenxgraph.errors import WorkersExhaustedError

__all__ = ["WorkerPool"]


class _Job:
    """One call: queued, then running, then done; ``abandoned`` once its caller gave up."""

    __slots__ = (
        "abandoned",
        "args",
        "began",
        "context",
        "done",
        "function",
        "future",
        "started",
    )

    def __init__(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        future: asyncio.Future[Any],
        began: asyncio.Future[None] | None = None,
    ) -> None:
        self.function = function
        self.args = args
        self.context = contextvars.copy_context()
        self.future = future
        self.began = began
        """Set when a thread starts the call (only for a call with a timeout)."""
        self.started = False
        self.done = False
        self.abandoned = False


class WorkerPool:
    """A bounded pool of daemon threads for one graph's sync user code."""

    def __init__(self, max_threads: int = 16, *, name: str = "tenxgraph-worker") -> None:
        """``max_threads`` (at least 1, checked by ``compile``) bounds the threads started."""
        self.max_threads = max_threads
        self.name = name
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._threads = 0
        self._idle = 0
        self._stuck = 0

    @property
    def threads(self) -> int:
        """Threads started so far (they stay, idle, for later calls)."""
        return self._threads

    @property
    def stuck(self) -> int:
        """Calls still running although their caller gave up on them (e.g. timed out)."""
        return self._stuck

    async def run(
        self, function: Callable[..., Any], *args: Any, run_limit: float | None = None
    ) -> Any:
        """Call ``function(*args)`` on a pool thread and wait for it, with the caller's context.

        With ``run_limit``, ``TimeoutError`` once the call ran that many
        seconds, counted from its start on a thread (a caller's own
        ``asyncio.timeout`` would count the wait in the queue too); the call
        goes on, stuck.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job = _Job(function, args, future, None if run_limit is None else loop.create_future())
        self._submit(job)
        try:
            if job.began is None:
                return await future
            await asyncio.wait((job.began, future), return_when=asyncio.FIRST_COMPLETED)
            async with asyncio.timeout(run_limit):
                return await future
        except (asyncio.CancelledError, TimeoutError):
            self._abandon(job)
            raise

    def _submit(self, job: _Job) -> None:
        with self._lock:
            if self._stuck >= self.max_threads:
                raise WorkersExhaustedError(
                    f"all {self.max_threads} worker threads are held by calls that timed out "
                    "or were cancelled and have not returned; raise the graph's tool_threads "
                    "or make those tools return"
                )
            if self._idle == 0 and self._threads < self.max_threads:
                self._threads += 1
                threading.Thread(
                    target=self._work, name=f"{self.name}-{self._threads}", daemon=True
                ).start()
            else:
                self._idle -= 1  # this job will take an idle thread
            self._jobs.put(job)

    def _abandon(self, job: _Job) -> None:
        with self._lock:
            if job.started and not job.done:
                job.abandoned = True
                self._stuck += 1
                if self._stuck >= self.max_threads:
                    self._fail_queued()
            elif not job.started:
                job.done = True  # still queued: the thread that takes it skips it

    def _fail_queued(self) -> None:
        """Every thread is stuck: the queued calls would wait forever, so they fail now.

        Called with the lock held. No thread waits on the queue then (each
        is in a stuck call), so the queue is drained without a race.
        """
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job.done:
                continue
            job.done = True
            failure = WorkersExhaustedError(
                f"all {self.max_threads} worker threads became held by calls that timed out "
                "or were cancelled while this call waited for one; raise the graph's "
                "tool_threads or make those tools return"
            )
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                job.future.get_loop().call_soon_threadsafe(_settle, job.future, (False, failure))

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                skip = job.done
                job.started = True
            if not skip:
                if job.began is not None:
                    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                        job.began.get_loop().call_soon_threadsafe(_settle, job.began, (True, None))
                self._execute(job)
            with self._lock:
                self._idle += 1

    def _execute(self, job: _Job) -> None:
        try:
            outcome: tuple[bool, Any] = (True, job.context.run(job.function, *job.args))
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome = (False, exc)
        with self._lock:
            job.done = True
            if job.abandoned:
                self._stuck -= 1
                return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for the result
            job.future.get_loop().call_soon_threadsafe(_settle, job.future, outcome)


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)
