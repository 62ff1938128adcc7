"""Browser-side tool results posted to a worker that does not hold the run, carried to its holder.

A run waiting for a browser's results waits in the memory of the worker
running it (``RemoteCalls``), while a load balancer sends the client's
``POST .../tool_results`` to any worker. The worker that receives it checks
what the run table tells (the run is the caller's, running, and its
thread's lease is live and the run's), then leaves the results in a row of
``server_run_mail`` addressed to the run, not to a worker (the row never
says which worker holds a run: the lease does), and wakes the workers with
a ``NOTIFY`` naming the run on the mail channel. The worker holding the run
takes the row (once), applies the results as if they were posted to it
(the same checks, the same answer: accepted and pending, or the 409/422 it
would have given) and writes the answer back, waking the sender on its own
channel. Both also poll (each second) in case a notification was missed.

A holder that does not take the row within ``wait_seconds`` (it hangs, or
died before its lease expired) makes the sender withdraw it and answer 504:
nothing was applied, the client may post again. Postgres carries the
letters with or without Redis, as the leases carry stop requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException

from tenxgraph.errors import StateError
from tenxgraph.server.http_errors import bad_request

if TYPE_CHECKING:
    from tenxgraph.runs import PgRunQueue, RunRecord

__all__ = ["ToolResultRelay"]

logger = logging.getLogger("tenxgraph.server.runs")

POLL_SECONDS = 1.0
"""How often both sides look at the table when no notification came."""


class ToolResultRelay:
    """One worker's side of the letters: send results to a run's holder, apply those sent here."""

    def __init__(
        self,
        queue: PgRunQueue,
        worker_id: str,
        held: Callable[[str], RunRecord | None],
        held_ids: Callable[[], list[str]],
        *,
        wait_seconds: float = 5.0,
    ) -> None:
        """``held(run_id)`` is the run this worker holds, or None; ``held_ids()`` all of them."""
        self.queue, self.worker_id, self.held = queue, worker_id, held
        self.held_ids = held_ids
        self.wait_seconds = wait_seconds
        self.channel = queue.mail.worker_channel(worker_id)
        """The channel this worker listens on (letters for it, answers to its letters)."""
        self._mail = asyncio.Event()
        self._answers: dict[int, asyncio.Event] = {}

    def mail_came(self, run_id: str) -> None:
        """A notification on the mail channel: a letter came for ``run_id`` (maybe held here)."""
        if self.held(run_id) is not None:
            self._mail.set()

    def notified(self, payload: str) -> None:
        """A notification on this worker's channel: an answer to a letter it sent."""
        with contextlib.suppress(ValueError):
            waiter = self._answers.get(int(payload))
            if waiter is not None:
                waiter.set()

    # --- the holder's side ------------------------------------------------------------

    async def serve(self) -> None:
        """Take and answer the letters to this worker, until cancelled."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._mail.wait(), POLL_SECONDS)
            self._mail.clear()
            try:
                for letter, run_id, sender, body in await self.queue.mail.take(self.held_ids()):
                    await self.queue.mail.answer(letter, sender, self.apply(run_id, body))
            except Exception as exc:  # the senders time out (504); the next poll tries again
                logger.warning("worker %s: tool results not relayed: %s", self.worker_id, exc)

    def apply(self, run_id: str, results: list[dict[str, Any]]) -> dict[str, Any]:
        """Submit ``results`` to the run held here; the answer the route gives, as JSON."""
        record = self.held(run_id)
        if record is None or record.finished:
            detail = f"run {run_id!r} ended; resume the thread instead"
            return {"status": 409, "detail": detail}
        try:
            return {"status": 200, "pending": record.remote.submit(results)}
        except HTTPException as exc:
            return {"status": exc.status_code, "detail": str(exc.detail)}
        except StateError as exc:
            return {"status": 422, "detail": str(exc)}

    # --- the receiving worker's side --------------------------------------------------

    async def send(self, record: RunRecord, results: list[dict[str, Any]]) -> list[str]:
        """Hand ``results`` to the worker holding ``record``; the calls still pending.

        Raises the holder's 409/422 as if it was posted there, a 409 when no
        live worker holds the run, a 504 when the holder did not take them.
        """
        if not await self.queue.alive(record.run_id):
            bad_request(
                f"run {record.run_id!r} is not running on any worker now (queued, ended, or "
                "being taken over after its worker stopped): it waits for no tool results",
                409,
            )
        waiter = asyncio.Event()
        letter = await self.queue.mail.post(record.run_id, self.worker_id, results)
        self._answers[letter] = waiter
        try:
            answer = await self._answer(record.run_id, letter, waiter)
        finally:
            self._answers.pop(letter, None)
            with contextlib.suppress(Exception):
                await self.queue.mail.drop(letter)
        if answer["status"] != 200:
            bad_request(str(answer["detail"]), int(answer["status"]))
        return [str(call_id) for call_id in answer["pending"]]

    async def _answer(self, run_id: str, letter: int, waiter: asyncio.Event) -> dict[str, Any]:
        """Wait for the holder's answer; withdraw the letter if it is not taken in time.

        A letter taken but not answered in time gets as long again (the
        holder applies results at once: it is answering).
        """
        deadline, extended = time.monotonic() + self.wait_seconds, False
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), POLL_SECONDS)
            waiter.clear()
            reply = await self.queue.mail.reply(letter)
            if reply is not None and reply[0] == "done":
                return dict(reply[1])
            if time.monotonic() < deadline:
                continue
            if reply is not None and reply[0] == "taken" and not extended:
                deadline, extended = time.monotonic() + self.wait_seconds, True
                continue
            withdrawn = (
                reply is not None and reply[0] == "new" and await self.queue.mail.withdraw(letter)
            )
            outcome = "nothing was applied" if withdrawn else "they may have been applied"
            bad_request(
                f"the worker holding run {run_id!r} did not answer with the tool results within "
                f"{self.wait_seconds:g} s; {outcome}: look at the run's stream, or post them again",
                504,
            )
