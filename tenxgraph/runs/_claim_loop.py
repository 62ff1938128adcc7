"""How a worker takes queued runs: claims in batches while it has room, each run a task of its own.

A worker runs up to ``limit`` claimed runs at once. Runs mostly wait (on a
model, a tool, a browser), so each is an asyncio task rather than a thread,
and one loop claims for all of them: a batch of rows per transaction
(``PgRunQueue.claim_many``), again at once after a full batch, otherwise
once a notification says a run became claimable or the poll interval
(jittered) passed. When ``limit`` runs are going, it waits for one to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tenxgraph.runs._pg_queue import ClaimedRun

__all__ = ["CLAIM_BATCH", "CONSUMERS", "ClaimLoop"]

logger = logging.getLogger("tenxgraph.server.runs")

CONSUMERS = 100
"""Queued runs one worker runs at once by default: sized for runs that mostly wait on models
and tools, each an asyncio task, so a worker holds this many without a thread or a connection
each."""
CLAIM_BATCH = 16
"""The most runs one claim takes: a worker with room claims again at once after a full batch,
and concurrent claimers (other workers) split the queue between their batches."""


class ClaimLoop:
    """One worker's claims: batches while fewer than ``limit`` claimed runs go on."""

    def __init__(
        self,
        claim: Callable[[int], Awaitable[list[ClaimedRun]]],
        serve: Callable[[ClaimedRun], Awaitable[None]],
        again: Callable[[str], None],
        spawn: Callable[[Any], asyncio.Task[Any]],
        *,
        limit: int,
        poll_seconds: float,
        name: str,
    ) -> None:
        """``claim(n)`` takes up to n rows; ``serve`` runs one to its end, in a ``spawn``ed task.

        ``again(run_id)``: a run served here was claimed again (this worker
        stalled past its lease); the earlier serve should stop.
        """
        self._claim, self._serve, self._again, self._spawn = claim, serve, again, spawn
        self.limit, self.poll_seconds, self.name = limit, poll_seconds, name
        self.running = 0
        """Claimed runs going on now."""
        self.closing = False
        self._failing = False
        self._work = asyncio.Event()
        self._room = asyncio.Event()
        self._serving: dict[str, asyncio.Task[Any] | None] = {}
        """The task serving the newest claim of each run served here."""

    def wake(self) -> None:
        """A run may have become claimable (a notification): claim without waiting for the poll."""
        self._work.set()

    async def run(self) -> None:
        """Claim and start runs until ``closing``."""
        while not self.closing:
            room = self.limit - self.running
            if room <= 0:  # full: a claimed run's end makes room
                self._room.clear()
                await self._room.wait()
                continue
            batch = min(room, CLAIM_BATCH)
            self._work.clear()  # a notification from now on means: claim again
            try:
                claims = await self._claim(batch)
                self._failing = False
            except Exception as exc:  # logged once per outage, retried at the next poll
                if not self._failing:
                    logger.warning("worker %s: claim failed: %s", self.name, exc)
                self._failing, claims = True, []
            for claim in claims:
                self.running += 1
                self._spawn(self._served(claim))
            if len(claims) < batch:  # nothing more to take now: wait to be told, or poll
                with contextlib.suppress(TimeoutError):
                    wait = self.poll_seconds * (0.5 + random.random())
                    await asyncio.wait_for(self._work.wait(), wait)

    def newest(self, run_id: str) -> bool:
        """True in the task serving the newest claim of ``run_id`` (an older must not start it)."""
        return self._serving.get(run_id) is asyncio.current_task()

    async def _served(self, claim: ClaimedRun) -> None:
        """Serve a claim once any earlier claim of its run served here stopped.

        Two attempts of one run in one process would share its records, its
        stream and its thread's warm state.
        """
        me = asyncio.current_task()
        earlier, self._serving[claim.run_id] = self._serving.get(claim.run_id), me
        try:
            if earlier is not None:
                self._again(claim.run_id)
                await asyncio.wait([earlier])
            await self._serve(claim)
        finally:
            self.running -= 1
            self._room.set()
            if self._serving.get(claim.run_id) is me:
                del self._serving[claim.run_id]
