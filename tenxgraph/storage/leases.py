"""The thread-lease contract: one run holds a thread at a time.

One run holds a thread at a time through its *lease*: a row naming the
holder (``owner``) and an expiry, taken before the run reads the thread,
extended by a heartbeat, and released at the run's end. A holder that dies
stops extending it, so the thread is free again once it expires. Leases
exist for threads that have no state yet (a new thread's first run holds one
too). A run that waits for a thread asks its holder to stop through the
lease (``arequest_stop``); the holder reads the request at its next renewal.
A request may name the holder it is meant for (``owner_prefix``): a run
queue stops one run, not whichever run holds the thread by then.

``ThreadLeases`` is a capability of its own, apart from the ``Checkpointer``
contract (a backend may store threads without offering leases). A compiled
graph with a checkpointer takes its runs' leases from that checkpointer,
which must then implement ``ThreadLeases`` too (``compile`` refuses one that
does not). Every backend tenxgraph ships does, and keeps the lease rows in
the same database as the threads: that is what makes a save's fence whole.
A save made under a lease (``ThreadWrite.lease``, ``arewind(lease=...)``)
is refused in the save's own transaction unless that lease is still its
owner's (or, with ``ThreadWrite.take_lease``, the save takes it there), so a
run that lost its lease (it stalled past the expiry and another run took the
thread) writes nothing more. A backend that is not a
``ThreadLeases`` cannot check that and ignores the field.

``tenxgraph.testing.ThreadLeasesContract`` is the conformance suite of this
contract, run against a backend that stores threads too (the fence is part
of what it checks).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer.base import ThreadStamp

__all__ = ["STOP_REQUESTS", "ThreadLeases"]

STOP_REQUESTS = frozenset({"interrupt", "rollback"})
"""What a waiting run may ask of a thread's lease holder (``arequest_stop``): stop at the
next step and keep the turn so far (``interrupt``), or stop and have the waiting run discard
the unfinished turn (``rollback``)."""


class ThreadLeases(ABC):
    """Who holds each thread: take, renew and give up a lease, and ask its holder to stop.

    Backends implement the abstract methods; ``atake_thread`` has a default
    in two calls that a backend overrides to answer in one round trip.
    """

    saves_take_leases: ClassVar[bool] = False
    """True when this backend's saves honour ``ThreadWrite.take_lease`` (the lease taken in
    the save's own transaction). A graph then takes the lease of a thread it holds warm with
    the run's first save, one transaction fewer a turn; otherwise it takes it on its own."""

    @abstractmethod
    async def atake_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Take the thread's lease for ``owner`` for ``seconds``, unless someone else holds it.

        Returns None when ``owner`` holds it now (taken because it was free
        or expired, or already ``owner``'s: then extended), else the current
        holder's owner string. Taking it clears any stop request.
        """

    @abstractmethod
    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        """The leased thread's current stamp, or None when it does not exist.

        Leases live beside the threads they guard, so a lease backend can
        say which state a new holder finds; a checkpointer that is also a
        ``ThreadLeases`` has this method already (``Checkpointer.aversion``).
        """

    async def atake_thread(
        self, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None]:
        """``atake_lease``, and when the lease is taken, the thread's current stamp too.

        Returns ``(holder, None)`` when someone else holds the lease, else
        ``(None, stamp)`` (the stamp None for a thread that does not exist).
        A runtime that keeps threads warm learns with one call whether its
        copy is current; backends override this default (two calls) to
        answer in one round trip.
        """
        holder = await self.atake_lease(key, owner, seconds)
        return holder, (await self.aversion(key) if holder is None else None)

    @abstractmethod
    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        """Extend ``owner``'s lease to ``seconds`` from now (the heartbeat).

        Returns the stop request a waiting run made (one of ``STOP_REQUESTS``)
        or None. Raises ``ThreadBusyError`` when ``owner`` no longer holds the
        lease (released, or expired and taken by another run).
        """

    @abstractmethod
    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        """Give the lease up, if ``owner`` still holds it (else do nothing)."""

    @abstractmethod
    async def arequest_stop(
        self, key: ThreadKey, request: str, *, owner_prefix: str | None = None
    ) -> str | None:
        """Ask the holder of the unexpired lease to stop (``request`` in ``STOP_REQUESTS``).

        Returns the holder's owner string, or None when no one holds the
        lease (nothing to stop). The holder sees the request at its next
        ``arenew_lease``. An unknown ``request`` raises ``StateError``.

        ``owner_prefix`` names whom to stop: the request is marked only when
        the holder's owner string starts with it, else nothing is marked and
        None is returned. A run queue stops one run this way (its runs hold
        leases as ``f"{run_id}/{token}"``, so it passes ``f"{run_id}/"``)
        without stopping another run that took the thread since.
        """
