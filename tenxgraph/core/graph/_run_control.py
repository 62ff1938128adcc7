"""How a run is steered: how each step ends, and the stop requests that reach a run.

The run loop goes on only after a ``Next``; every other outcome ends the run
in ``CompiledGraph._conclude``. ``RunControl`` is a running run's handle: what
``stop``, ``stop_run``, the thread lease's stop requests and run hooks use to
reach it from any thread.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tenxgraph.core.graph._events import RunResult
from tenxgraph.core.graph._interrupt import InterruptKind
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import GraphRunError, NodeError, TenxGraphError, ThreadBusyError
from tenxgraph.storage.checkpointer.base import ThreadStamp

if TYPE_CHECKING:
    from tenxgraph.core.graph._history import StateSnapshot

__all__ = [
    "Displaced",
    "Fail",
    "Finish",
    "Next",
    "Outcome",
    "Pause",
    "RunControl",
    "drain",
    "new_run_id",
]


class _RunIds:
    """Run ids: a random prefix per process (drawn again in a forked child) and a counter."""

    prefix = os.urandom(8).hex()
    counter = itertools.count()

    @classmethod
    def redraw(cls) -> None:
        cls.prefix, cls.counter = os.urandom(8).hex(), itertools.count()


if hasattr(os, "register_at_fork"):  # not on Windows, where nothing forks
    os.register_at_fork(after_in_child=_RunIds.redraw)


def new_run_id() -> str:
    """A new run id: 32 hex digits, like ``uuid4().hex``, unique across processes.

    64 random bits name the process and a counter the run, so an id costs no
    system call and no ``UUID`` object (``uuid4`` was a tenth of a short run).
    """
    return f"{_RunIds.prefix}{next(_RunIds.counter):016x}"


@dataclass(slots=True, eq=False)
class RunControl:
    """A run in progress: its identity, and ``stop`` to end it from any thread."""

    run_id: str
    thread: ThreadKey | None
    """The thread the run holds (None for a graph without a checkpointer and thread id)."""
    stop_requested: bool = False
    task: asyncio.Task[Any] | None = None
    """The run's task while the node's own code runs (None during saves and between steps)."""
    loop: asyncio.AbstractEventLoop | None = None
    request: str = "interrupt"
    """Why it stops: ``interrupt`` (a stop: keep the turn so far), ``rollback`` (a newer run
    discards the turn) or ``lost`` (another run took the thread)."""
    driver: asyncio.Task[Any] | None = None
    """The task that drives the run since its last event went out (None: not looked up yet);
    the next event's reader may be another task."""
    lease_owner: str | None = None
    """The owner of a lease on the run's thread taken for this run before it began (a run
    queue takes it with the run's row): the run continues that lease instead of taking one."""
    lease_stamp: ThreadStamp | None = None
    """The thread's stamp read with that lease in one transaction, when its taker read it:
    the run starts from it instead of asking again (used once; a later leg reads it anew)."""
    on_save: Callable[[StateSnapshot[Any]], None] | None = None
    """Called after each save of the run's thread with the checkpoint it wrote: what a
    history read would return for it, but ``created_at`` (when the save returned, a moment
    after the checkpointer's own time) and ``state``, which is the run's own object: read
    what you need before returning, as the run's next step changes it. A run stream sends
    each step's state from it instead of reading the thread back."""

    def bind(self, run_id: str, thread: ThreadKey | None) -> RunControl:
        """The caller's handle becomes the run's: its id and thread, no task looked up yet."""
        self.run_id, self.thread = run_id, thread
        self.task = self.driver = None
        return self

    def stop(self, request: str = "interrupt") -> None:
        """Stop before the next node, cancelling a running async node; safe from any thread.

        The run ends with status ``stopped`` and keeps its turn so far; the
        other requests (``rollback``, ``lost``) come from the thread's lease.
        """
        self.stop_requested, self.request = True, request
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._cancel_node)

    def arm(self) -> None:
        """The node's code runs (again) in the run's task: a stop may cancel it from now on.

        Raises ``CancelledError`` at once when a stop came while the node was
        not cancellable (during a save), as if it had been delivered then.
        The task is looked up once per stretch between events (``yielded``),
        not per step: each lookup asks the OS for the process id on Python 3.11.
        """
        task = self.driver
        if task is None:
            loop = self.loop = asyncio.get_running_loop()
            task = self.driver = asyncio.current_task(loop)
        self.task = task
        if self.stop_requested:
            raise asyncio.CancelledError

    def yielded(self) -> None:
        """An event went out: the run may go on in the task of the next one's reader."""
        self.driver = None

    def disarm(self) -> None:
        """A save or the step's end: a stop must not cancel the run's task now."""
        self.task = None

    def _cancel_node(self) -> None:
        """On the run's loop: cancel the node if the run waits inside the node's code.

        Decided here, not in ``stop``: between the request and this call the
        node may have returned and a save begun, and a save cancelled halfway
        could commit while the run believes it did not. This runs while the
        run's task is suspended, so an armed task waits at an ``await`` of the
        node and the cancellation lands there.
        """
        if self.task is not None:
            self.task.cancel()

    def outcome(self) -> Outcome:
        """How the stopped run ends: stopped and saved, or displaced without another write."""
        if self.request == "interrupt":
            return Finish("stopped")
        return Displaced(self.request)


class Outcome:
    """How a step ended; the run loop goes on only after ``Next``."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Next(Outcome):
    """Run ``node`` next."""

    node: str


@dataclass(frozen=True, slots=True)
class Pause(Outcome):
    """Pause at an interrupt ``when`` (before, after or inside ``node``); go on at ``resume_at``."""

    node: str
    resume_at: str
    value: Any
    when: InterruptKind


@dataclass(frozen=True, slots=True)
class Finish(Outcome):
    """End the run: it reached END, or a stop request (kept turn) ended it."""

    status: Literal["completed", "stopped"]


@dataclass(frozen=True, slots=True)
class Displaced(Outcome):
    """Another run took the thread: this one writes nothing more."""

    request: str

    def raised(self, thread_id: str) -> ThreadBusyError:
        """What the displaced run's caller gets."""
        if self.request == "rollback":
            detail = (
                "a newer run with multitask_strategy 'rollback' stopped this run and discards "
                "its unfinished turn"
            )
        else:
            detail = "this run's lease expired and another run took the thread"
        return ThreadBusyError(thread_id, detail)


@dataclass(frozen=True, slots=True)
class Fail(Outcome):
    """End the run as failed at ``node``: saved with status ``error``, then raised."""

    node: str
    error: BaseException
    resume_at: str | None = None
    """Where ``invoke(None)`` goes on; ``node`` itself unless the step was already merged."""

    def raised(self) -> TenxGraphError:
        """What the caller gets: library errors as they are, anything else as a NodeError."""
        if isinstance(self.error, TenxGraphError):
            return self.error
        error = NodeError(self.node, f"raised {type(self.error).__name__}: {self.error}")
        error.__cause__ = self.error
        return error


async def drain(events: AsyncIterator[Any]) -> dict[str, Any]:
    """Run a run's events to the end and return its ``RunResult.as_dict()`` (``ainvoke``)."""
    result: RunResult | None = None
    async for event in events:
        if isinstance(event, RunResult):
            result = event
    if result is None:  # pragma: no cover - the loop always ends with a RunResult
        raise GraphRunError("the run ended without a result")
    return result.as_dict()
