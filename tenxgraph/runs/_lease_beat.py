"""One heartbeat per worker for the thread leases of all the runs it holds.

A worker holding a hundred runs would otherwise renew a hundred leases
apart, each a pooled connection and a round trip every second. ``LeaseBeat``
renews them all in one statement (``PgRunQueue.renew_leases``) every third
of the lease (at most ``HEARTBEAT`` seconds apart, as a lease's own
heartbeat) and hands each lease's answer to it as its own heartbeat would:
a stop request, or ``"lost"`` when another worker took it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from tenxgraph.runs._leases import HEARTBEAT

if TYPE_CHECKING:
    from tenxgraph.runs._leases import ThreadLease
    from tenxgraph.runs._pg_queue import PgRunQueue

__all__ = ["LeaseBeat"]

logger = logging.getLogger("tenxgraph.server.runs")


class LeaseBeat:
    """Renews the leases ``add``ed, all in one statement; their answers go to ``on_stop``."""

    def __init__(self, queue: PgRunQueue, seconds: float) -> None:
        """Leases of ``seconds``, renewed through ``queue`` (the same database as the leases)."""
        self.queue, self.seconds = queue, seconds
        self.interval = min(seconds / 3, HEARTBEAT)
        self._held: dict[str, ThreadLease] = {}
        """The leases beaten, by owner."""
        self._task: asyncio.Task[None] | None = None

    def add(self, lease: ThreadLease) -> None:
        """Renew ``lease`` from the next beat on, until it is released or lost."""
        self._held[lease.owner] = lease
        if self._task is None or self._task.done():  # the beat starts with the first lease
            self._task = asyncio.get_running_loop().create_task(self._beat())

    def _holds(self, lease: ThreadLease) -> bool:
        """True while ``lease`` is beaten here; forgets it once released."""
        if lease.released and self._held.get(lease.owner) is lease:
            del self._held[lease.owner]
        return self._held.get(lease.owner) is lease

    async def aclose(self) -> None:
        """Stop beating (the leases still held expire unless released)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _beat(self) -> None:
        while self._held:
            await asyncio.sleep(self.interval)
            leases = [lease for lease in list(self._held.values()) if self._holds(lease)]
            if not leases:
                continue
            try:
                answers = await self.queue.renew_leases(
                    [(lease.key, lease.owner) for lease in leases], self.seconds
                )
            except Exception as exc:  # the next save reports a real failure; keep trying
                logger.warning("%d thread leases not renewed: %s", len(leases), exc)
                continue
            for lease in leases:
                if not self._holds(lease):  # released meanwhile: its row may be gone
                    continue
                request = answers.get(lease.owner, "lost")
                if request is None or lease.on_stop is None:
                    continue
                if request == "lost":
                    del self._held[lease.owner]
                lease.on_stop(request)
