"""One run per thread: the lease a run holds on its thread, and what a second run does.

A run takes its thread's lease before it reads the thread and gives it up
when it ends (a run on a thread its graph keeps warm reads nothing: its lease
is ``ThreadLease.deferred``, taken by its first save where the backend's
saves can take leases). While it runs, a heartbeat extends the lease every third of its
duration (at least once a second, which is also how soon it sees a stop request
made from another process), so a run that dies (kill -9, a lost machine) blocks the thread for
at most ``lease_seconds``. Every save of the run is fenced by the lease, so a
run that stalled past its expiry and lost the thread writes nothing more.

A run that finds the thread held acts on its ``multitask_strategy`` (the
names of LangGraph's server): ``reject`` raises ``ThreadBusyError`` before
anything is written, ``enqueue`` waits for the thread, ``interrupt`` asks the
holder to stop at its next step (keeping its turn so far) and waits,
``rollback`` asks it to stop and then discards its unfinished turn. Waits are
bounded by ``busy_timeout``.

The lease rows are the graph's checkpointer's: it must implement the
``ThreadLeases`` contract beside ``Checkpointer`` (``compile`` refuses one
that does not, see ``lease_table``), so a save fenced by a lease is checked
in the save's own transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import new_message_id
from tenxgraph.errors import ConfigError, StorageError, ThreadBusyError
from tenxgraph.runs import _turns as turns
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadStamp
from tenxgraph.storage.leases import ThreadLeases

__all__ = [
    "LeasePolicy",
    "MultitaskStrategy",
    "Take",
    "ThreadLease",
    "lease_owner",
    "lease_table",
    "missing_leases",
    "take_thread",
]

logger = logging.getLogger("tenxgraph.runs")

MultitaskStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]
"""What a run does when another run holds its thread (config key ``multitask_strategy``)."""

_STRATEGIES: tuple[str, ...] = get_args(MultitaskStrategy)
HEARTBEAT = 1.0
"""The longest gap, in seconds, between two renewals of a held lease (a third of
``lease_seconds`` when that is shorter)."""
_FIRST_POLL, _LAST_POLL = 0.01, 0.25
"""Seconds between attempts to take a held thread: doubling from the first to the last."""


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """How a graph's runs hold threads; a run's config may override the strategy and the wait."""

    lease_seconds: float = 30.0
    """How long a lease lasts unless renewed: the longest a dead run blocks its thread."""
    strategy: MultitaskStrategy = "reject"
    busy_timeout: float = 60.0
    """How long ``enqueue``, ``interrupt`` and ``rollback`` wait for the thread."""

    def __post_init__(self) -> None:
        if not self.lease_seconds > 0:
            raise ConfigError(f"lease_seconds must be > 0, got {self.lease_seconds!r}")
        if self.strategy not in _STRATEGIES:
            raise ConfigError(
                f"multitask_strategy must be one of {list(_STRATEGIES)}, got {self.strategy!r}"
            )
        if not self.busy_timeout >= 0:
            raise ConfigError(f"busy_timeout must be >= 0 seconds, got {self.busy_timeout!r}")

    def for_run(self, config: Mapping[str, Any]) -> LeasePolicy:
        """The policy with the run config's strategy, ``busy_timeout`` and ``lease_seconds``.

        A server on Postgres sets the lease of the runs it serves.
        """
        strategy = config.get("multitask_strategy", self.strategy)
        timeout = config.get("busy_timeout", self.busy_timeout)
        seconds = config.get("lease_seconds", self.lease_seconds)
        if (strategy, timeout, seconds) == (self.strategy, self.busy_timeout, self.lease_seconds):
            return self
        return LeasePolicy(seconds, strategy, timeout)


def missing_leases(checkpointer: Checkpointer) -> str | None:
    """Why ``checkpointer`` cannot hold a graph's threads, or None when it can."""
    if isinstance(checkpointer, ThreadLeases):
        return None
    return (
        f"the checkpointer {type(checkpointer).__name__} does not implement ThreadLeases "
        "(tenxgraph.storage.ThreadLeases: atake_lease, arenew_lease, arelease_lease, "
        "arequest_stop, aversion), and a graph's runs hold their thread through its leases; "
        "implement that contract on the backend too (tenxgraph.testing.ThreadLeasesContract "
        "checks it), or use the graph without a checkpointer"
    )


def lease_table(checkpointer: Checkpointer) -> ThreadLeases:
    """``checkpointer`` as the ``ThreadLeases`` runs take their leases from (else ConfigError)."""
    if isinstance(checkpointer, ThreadLeases):
        return checkpointer
    raise ConfigError(str(missing_leases(checkpointer)))


class ThreadLease:
    """A held lease: its heartbeat, the stop requests it brings, and its release."""

    def __init__(self, checkpointer: Checkpointer, key: ThreadKey, owner: str, seconds: float):
        self.checkpointer = checkpointer
        """Where the thread is saved (every save of the holder names ``owner``)."""
        self.thread_leases = lease_table(checkpointer)
        """Where the lease is held: the checkpointer itself, as a ``ThreadLeases``."""
        self.key = key
        self.owner = owner
        """Who holds it: the run id and a random suffix (passed to every fenced save)."""
        self.seconds = seconds
        self.on_stop: Callable[[str], None] | None = None
        """Called on the run's loop with ``"interrupt"``, ``"rollback"`` or ``"lost"``."""
        self.stamp: ThreadStamp | None = None
        """The thread's stamp when the lease was taken (None: no thread yet)."""
        self.released = False
        """Set once the lease was given up (by ``release`` or with the run's last save)."""
        self.kept = False
        """True for a lease the caller took for the run and keeps (``take_thread(owner=...)``):
        the caller renews it (and relays its stop requests to the run) while the run goes, and
        the run leaves it held when it ends."""
        self.requested: str | None = None
        """A stop request already on a ``kept`` lease when the run took it over."""
        self.taker: Take = self.thread_leases.atake_thread
        """How ``take_thread`` takes (and retakes, while it waits) this lease."""
        self.pending: LeasePolicy | None = None
        """Set on a lease not taken yet (``deferred``): the run's first save takes it
        (``ThreadWrite.take_lease``), or ``take_pending`` does with this policy."""
        self._heartbeat: asyncio.Task[None] | None = None
        self._first_beat: asyncio.TimerHandle | None = None

    def start_heartbeat(self) -> None:
        """Renew the lease and read stop requests every ``HEARTBEAT`` s (or less) until released.

        The first beat is a timer that starts the heartbeat's task when due:
        most runs end before, and a task per run (made, cancelled, awaited)
        cost more loop turns than a short run's own work.
        """
        loop = asyncio.get_running_loop()
        self._first_beat = loop.call_later(self._interval(), self._start_beating)

    def _interval(self) -> float:
        return min(self.seconds / 3, HEARTBEAT)

    def _start_beating(self) -> None:
        self._first_beat = None
        self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        while True:
            try:
                request = await self.thread_leases.arenew_lease(self.key, self.owner, self.seconds)
            except ThreadBusyError:
                request = "lost"
            except Exception as exc:  # the next save reports a real failure; keep trying
                # (a third-party backend's own error too: a dead heartbeat would fail the
                # run's last save with it, losing the finished turn)
                logger.warning("lease of thread %r not renewed: %s", self.key.thread_id, exc)
                request = None
            if request is not None and self.on_stop is not None:
                self.on_stop(request)
                if request == "lost":
                    return
            await asyncio.sleep(self._interval())

    async def stop_heartbeat(self) -> None:
        """No more renewals: the run is about to give the lease up.

        Waits for the cancelled beat with ``asyncio.wait``, which neither raises
        the beat's own end nor swallows a cancel of the run itself meanwhile
        (suppressing ``CancelledError`` around ``await task`` could not tell the two).
        """
        if self._first_beat is not None:  # most runs end before the first beat
            self._first_beat.cancel()
            self._first_beat = None
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            await asyncio.wait((task,))

    @classmethod
    def deferred(
        cls,
        checkpointer: Checkpointer,
        key: ThreadKey,
        run_id: str,
        policy: LeasePolicy,
        stamp: ThreadStamp,
    ) -> ThreadLease:
        """A lease of ``key`` for run ``run_id`` that the run's first save takes (``pending``).

        For a thread the caller holds a copy of as ``stamp`` (a warm thread) on a
        backend whose saves take leases (``saves_take_leases``): the first save
        takes the lease and checks the stamp in one transaction, so the turn
        commits once less. Nothing may be read from storage or run of the
        user's before that save; if it finds the thread held or changed, it
        wrote nothing, and the caller takes the lease with ``take_pending``.
        """
        lease = cls(checkpointer, key, lease_owner(run_id), policy.lease_seconds)
        lease.pending, lease.stamp = policy, stamp
        return lease

    async def take_pending(self) -> None:
        """Take a ``deferred`` lease now, acting on its policy's strategy as ``take_thread``."""
        policy, self.pending = self.pending, None
        if policy is None:
            return
        try:
            await _take(self, policy)
        except BaseException:
            self.released = True  # refused or timed out: not held (a rollback's failure gave it up)
            raise

    async def release_with(self, give_up: Callable[[str | None], Awaitable[bool]]) -> None:
        """Give the lease up in a caller's own statement: ``give_up(owner)`` drops it there.

        ``owner`` is None when there is nothing to drop (a ``kept`` or released lease).
        The heartbeat stops first, and the lease counts as released while the statement
        goes (a beat meanwhile must not take its dropped row for a lost lease); when
        ``give_up`` returns False (it did not run), the lease is released alone.
        """
        await self.stop_heartbeat()
        owner = None if self.released or self.kept else self.owner
        self.released = self.released or owner is not None
        if not await give_up(owner) and owner is not None:
            # no mutate: release() reads only whether it is true (None is as False)
            self.released = False  # pragma: no mutate
            await self.release()

    async def release(self) -> None:
        """Stop the heartbeat and give the lease up; a storage failure only delays the expiry.

        A ``kept`` lease is left held: its heartbeat stops, its caller releases it.
        """
        await self.stop_heartbeat()
        if self.released or self.kept:
            return
        self.released = True
        try:
            await self.thread_leases.arelease_lease(self.key, self.owner)
        except StorageError as exc:
            logger.warning(
                "lease of thread %r not released (it expires in %s s): %s",
                self.key.thread_id,
                self.seconds,
                exc,
            )


Take = Callable[[ThreadKey, str, float], Awaitable[tuple[str | None, ThreadStamp | None]]]
"""How a lease is taken: ``(key, owner, seconds) -> (holder, stamp)``, as ``atake_thread``."""


def lease_owner(run_id: str) -> str:
    """A new owner string for a lease of run ``run_id``: the run id, a slash, a random part.

    Whoever reads a lease row can tell which run holds it (the owner starts
    with ``run_id + "/"``), and two attempts at one run never share a lease.
    """
    return f"{run_id}/{new_message_id()[:8]}"  # random without a system call (new_incarnation)


async def take_thread(
    checkpointer: Checkpointer,
    key: ThreadKey,
    run_id: str,
    policy: LeasePolicy,
    *,
    owner: str | None = None,
    stamp: ThreadStamp | None = None,
    take: Take | None = None,
) -> ThreadLease:
    """Take ``key``'s lease for run ``run_id``, acting on ``policy.strategy`` if it is held.

    With ``rollback``, a holder that is alive discards its own unfinished turn
    before it lets go; one that died leaves its turn ``running``, and that
    turn is discarded here once the lease is taken, before the caller reads
    the thread (a thread that was free is not touched).

    ``owner`` continues a lease the caller took for this run and keeps (a
    run queue's claim takes it with the run's row; ``ThreadBusyError`` if
    it was lost meanwhile): the lease is ``kept``, its stop request (if
    any) in ``requested``, and left held when the run ends, so a run that
    pauses (say for a browser's tool results) and goes on in a second call
    keeps its thread between them. The caller renews a kept lease while the
    run goes (the run does not: two heartbeats would renew one lease) and
    passes its stop requests on to the run (``RunControl.stop``).
    ``stamp`` is the thread's stamp the caller read with that lease in one
    transaction (a claim's): the run starts from it without renewing the
    lease or reading the stamp again (two round trips); a stop request made
    since reaches the run through the caller's next renewal, a lease lost
    since through that renewal and the run's first save, which the lease fences.
    ``take`` replaces the lease table's ``atake_thread``: a run queue takes
    the lease and marks the run's row ``running`` in one transaction.
    """
    lease = ThreadLease(checkpointer, key, owner or lease_owner(run_id), policy.lease_seconds)
    if owner is not None and stamp is not None:  # renewed by its holder, read with it
        lease.kept, lease.stamp = True, stamp
        return lease
    if owner is not None:  # renewed, not taken again: taking would clear a stop request
        lease.kept = True
        lease.requested = await lease.thread_leases.arenew_lease(key, owner, policy.lease_seconds)
        lease.stamp = await checkpointer.aversion(key)
        return lease
    lease.taker = take or lease.thread_leases.atake_thread
    await _take(lease, policy)
    return lease


async def _take(lease: ThreadLease, policy: LeasePolicy) -> None:
    """Take the lease, waiting for (or stopping) its holder as the strategy says."""
    key, owner = lease.key, lease.owner
    holder, lease.stamp = await lease.taker(key, owner, policy.lease_seconds)
    if holder is None:
        return
    await _wait_for(lease, holder, policy)
    if policy.strategy == "rollback":  # the holder died before it could discard its turn
        try:
            if await turns.discard_unfinished(lease.checkpointer, key, owner, turns.DIED):
                lease.stamp = await lease.checkpointer.aversion(key)
        except BaseException:
            await lease.release()
            raise


async def _wait_for(lease: ThreadLease, holder: str, policy: LeasePolicy) -> None:
    """Act on the strategy toward ``holder``, then poll until the lease is ours or time is up."""
    key = lease.key
    if policy.strategy == "reject":
        raise ThreadBusyError(
            key.thread_id,
            f"run {holder} holds it; pass multitask_strategy 'enqueue' in the config to wait "
            "for it, or 'interrupt' or 'rollback' to stop it",
        )
    if policy.strategy in ("interrupt", "rollback"):
        await lease.thread_leases.arequest_stop(key, policy.strategy)
    clock = asyncio.get_running_loop().time  # the clock the sleeps below are timed on
    deadline = clock() + policy.busy_timeout
    delay = _FIRST_POLL
    waiting_for: str | None = holder
    while waiting_for is not None:
        if clock() >= deadline:
            raise ThreadBusyError(
                key.thread_id,
                f"run {waiting_for} still held it after a wait of {policy.busy_timeout} s "
                "(busy_timeout)",
            )
        await asyncio.sleep(min(delay, max(0.0, deadline - clock())))
        delay = min(delay * 2, _LAST_POLL)
        waiting_for, lease.stamp = await lease.taker(key, lease.owner, lease.seconds)
