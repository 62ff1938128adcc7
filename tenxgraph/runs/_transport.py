"""What the layer above gives a worker of the durable run registry, besides its ``RunParts``.

The durable registry (``DurableRunManager``) shares runs between workers
over Postgres, but how a run's events reach another worker, how a claimed
run's stored request becomes a run again, how a worker follows a run held
elsewhere and how browser-side tool results reach the run's worker are the
server's (its wire format, its request model, its HTTP errors): a
``RunTransport`` gives them, so this floor imports neither the runtime nor
the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tenxgraph.runs._pg_queue import ClaimedRun, PgRunQueue
    from tenxgraph.runs._registry import RunLog, RunRecord, RunSpec

__all__ = ["Followers", "Relay", "RunTransport", "settle"]


def settle(record: RunRecord, status: str, output: Any) -> None:
    """The run ended with ``status`` (its row says): set it, and answer its waiters."""
    record.output = output
    record.set_status(status)  # type: ignore[arg-type]
    record.done.set()


class Relay(Protocol):
    """Carries browser-side tool results to the worker holding a run (the server's)."""

    channel: str
    """The LISTEN/NOTIFY channel of this worker (answers to the letters it sent)."""

    def mail_came(self, run_id: str) -> None:
        """A letter came for ``run_id`` (maybe held here)."""

    def notified(self, payload: str) -> None:
        """A notification on this worker's channel."""

    async def serve(self) -> None:
        """Take and answer the letters to the runs held here, until cancelled."""

    async def send(self, record: RunRecord, results: list[dict[str, Any]]) -> list[str]:
        """Hand ``results`` to the worker holding ``record``; the calls still pending."""
        ...


class Followers(Protocol):
    """Records of the runs other workers hold (the server's: their events come from Redis)."""

    async def locate(self, user_id: str, run_id: str, thread_id: str | None) -> RunRecord | None:
        """A record following the run, None if unknown."""
        ...

    def forget(self, run_id: str) -> None:
        """Drop the record of an ended run."""


class RunTransport(Protocol):
    """What the layer above gives a worker of the durable registry besides ``RunParts``."""

    def log(self, run_id: str, limits: Any, start_after: int | None) -> RunLog:
        """The log of a run held here, shared with other workers.

        ``start_after``: the last event id an earlier attempt published.
        """
        ...

    async def flushed(self, log: RunLog) -> None:
        """Wait until the log's events reached the other workers."""

    def hand_back(self, log: RunLog) -> None:
        """The run is given up unfinished here: publish nothing more of it."""

    async def start_after(self, run_id: str, attempt: int) -> int | None:
        """The event id attempt ``attempt`` of the run goes on from."""
        ...

    async def resume(self, claim: ClaimedRun) -> RunSpec | tuple[str, Any]:
        """What to run for a claimed row, or ``(status, values)`` when its turn ended."""
        ...

    def relay(
        self,
        queue: PgRunQueue,
        worker_id: str,
        held: Callable[[str], RunRecord | None],
        held_ids: Callable[[], list[str]],
    ) -> Relay:
        """The relay of this worker."""
        ...

    def followers(
        self,
        queue: PgRunQueue,
        limits: Any,
        poll_seconds: float,
        spawn: Callable[[Any], asyncio.Task[Any]],
    ) -> Followers:
        """The records this worker keeps of other workers' runs."""
        ...

    async def aclose(self) -> None:
        """Close what it holds (its Redis client)."""
