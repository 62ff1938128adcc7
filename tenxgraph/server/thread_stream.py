"""Route: a thread's stream (``GET /threads/{id}/stream``, the SDKs' ``threads.joinStream``).

It follows the thread's runs one after the other, as LangGraph's server
does, and stays open until the client closes it: the run pending or
running when it opens (from its first event), then each run started on the
thread after it. ``stream_mode`` (or ``stream_modes``, the name LangGraph's
API reference gives) chooses what comes:

- ``run_modes`` (default): every event of each run as its own stream sent
  it, except its ``end``; a ``run_done`` event (``{"run_id", "status"}``)
  says it ended;
- ``lifecycle``: each run's ``metadata`` (its start) and ``run_done``;
- ``state_update``: each run's ``values`` and ``updates`` events.

An event's id is ``<run_id>:<n>`` (the run and the event's number in the
run's own stream; ``run_done`` has the number of the run's ``end``), so
``Last-Event-ID`` resumes after that event of that run, then goes on with
the runs after it; ``-`` starts from the oldest run
the server still keeps for the thread. Runs are found in the run manager
(every worker's with Postgres): while none is pending, the thread is
looked at again every half second.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Annotated, Any, cast

from fastapi import APIRouter, Header, Query

from tenxgraph.errors import EventsLostError
from tenxgraph.runs import FINISHED, RunRecord, RunRegistry
from tenxgraph.server._context import Context, ServerContext, User
from tenxgraph.server._event_log import EventLog
from tenxgraph.server._run_stream import StreamEncoder
from tenxgraph.server._sse import EventStreamResponse, comment
from tenxgraph.server.http_errors import bad_request
from tenxgraph.server.runs import PING_SECONDS, manager_of
from tenxgraph.server.threads import thread_info_or_404

__all__ = ["THREAD_STREAM_MODES", "router"]

router = APIRouter(tags=["threads"])

THREAD_STREAM_MODES = frozenset({"run_modes", "lifecycle", "state_update"})
POLL_SECONDS = 0.5
"""How often a thread stream with no run to follow looks for a new one."""
_KEPT_RUNS = 1000
"""How many of the thread's newest runs a thread stream looks at."""
_STATE_EVENTS = frozenset({"values", "updates"})


def _parse_last_event_id(header: str | None) -> tuple[str | None, int]:
    """``(run_id, n)`` from ``<run_id>:<n>``; ``("", 0)`` for ``-`` (from the oldest run)."""
    if header is None or header == "":
        return None, 0
    if header == "-":
        return "", 0
    run_id, _, number = header.rpartition(":")
    if not run_id or not number.isdigit():
        bad_request(
            f"Last-Event-ID of a thread stream is '<run_id>:<n>' or '-', got {header[:80]!r}", 400
        )
    return run_id, int(number)


def _modes(stream_mode: list[str] | None, stream_modes: list[str] | None) -> frozenset[str]:
    given = frozenset(m for m in [*(stream_mode or ()), *(stream_modes or ())] if m)
    if not given <= THREAD_STREAM_MODES:
        bad_request(
            f"stream_mode {sorted(given - THREAD_STREAM_MODES)} is not a thread stream mode; "
            f"use {sorted(THREAD_STREAM_MODES)}"
        )
    return given or frozenset({"run_modes"})


def _wanted(event: str, modes: frozenset[str]) -> bool:
    if "run_modes" in modes and event != "end":
        return True
    if "lifecycle" in modes and event == "metadata":
        return True
    return "state_update" in modes and event in _STATE_EVENTS


async def _runs_oldest_first(manager: RunRegistry, user: str, thread_id: str) -> list[str]:
    runs = await manager.locate_runs(user, thread_id, limit=_KEPT_RUNS)
    return [run["run_id"] for run in reversed(runs)]


async def _start_point(
    manager: RunRegistry, user: str, thread_id: str, resume: str | None
) -> set[str]:
    """The runs the stream skips: those before where it starts."""
    runs = list(reversed(await manager.locate_runs(user, thread_id, limit=_KEPT_RUNS)))
    order = [run["run_id"] for run in runs]
    if resume == "":  # "-": every run kept
        return set()
    if resume is not None:
        if resume not in order:
            bad_request(f"Last-Event-ID names run {resume!r}, which this thread does not keep", 410)
        return set(order[: order.index(resume)])
    # the finished ones: the stream starts at the run going now
    return {run["run_id"] for run in runs if run["status"] in FINISHED}


async def _next_run(
    manager: RunRegistry, user: str, thread_id: str, done: set[str]
) -> RunRecord | None:
    for run_id in await _runs_oldest_first(manager, user, thread_id):
        if run_id not in done:
            record = await manager.locate(user, run_id, thread_id)
            if record is not None:
                return record
            done.add(run_id)  # forgotten meanwhile
    return None


NextRun = Callable[[RunRegistry, str, str, set[str]], Awaitable[RunRecord | None]]


async def follow_runs(
    manager: RunRegistry, user: str, thread_id: str, done: set[str], next_run: NextRun, ping: str
) -> AsyncGenerator[RunRecord | bytes, None]:
    """The thread's runs as ``next_run`` picks them, then each new one as it comes.

    While none comes, a ``ping`` comment every ``PING_SECONDS`` keeps the
    connection (and the proxies on its way) open.
    """
    idle = 0.0
    while True:
        record = await next_run(manager, user, thread_id, done)
        if record is not None:
            idle = 0.0
            yield record
            continue
        await asyncio.sleep(POLL_SECONDS)
        idle += POLL_SECONDS
        if idle >= PING_SECONDS:
            idle = 0.0
            yield comment(ping)


def _frame(run_id: str, number: int | str, event: str, data: str) -> str:
    return f"id: {run_id}:{number}\r\nevent: {event}\r\ndata: {data}\r\n\r\n"


async def _events(
    context: ServerContext,
    user: str,
    thread_id: str,
    modes: frozenset[str],
    done: set[str],
    resume: tuple[str | None, int],
) -> AsyncGenerator[bytes, None]:
    runs = follow_runs(manager_of(context), user, thread_id, done, _next_run, "ping")
    async with contextlib.aclosing(runs):
        async for record in runs:
            if isinstance(record, bytes):
                yield record
                continue
            after = resume[1] if record.run_id == resume[0] else 0
            last = after
            try:
                log = cast(EventLog, record.log)  # the server's parts made it (``_run_parts``)
                async for batch in log.follow(after, heartbeat=PING_SECONDS):
                    if not batch:
                        yield comment("ping")
                        continue
                    last = batch[-1].id
                    chunk = "".join(
                        _frame(record.run_id, e.id, e.event, e.data)
                        for e in batch
                        if _wanted(e.event, modes)
                    )
                    if chunk:
                        yield chunk.encode()
            except EventsLostError as exc:
                text = StreamEncoder.dumps({"error": "EventsLostError", "message": str(exc)})
                yield _frame(record.run_id, last, "error", text).encode()
            done.add(record.run_id)
            resumed_at_end = last == after > 0  # its run_done went out before the reconnect
            if ("run_modes" in modes or "lifecycle" in modes) and not resumed_at_end:
                ended: dict[str, Any] = {"run_id": record.run_id, "status": record.status}
                yield _frame(record.run_id, last, "run_done", StreamEncoder.dumps(ended)).encode()


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    thread_id: str,
    context: Context,
    user: User,
    last_event_id: Annotated[str | None, Header()] = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    stream_modes: Annotated[list[str] | None, Query()] = None,
) -> EventStreamResponse:
    """Follow the thread's runs, one after the other, until the client closes the stream."""
    modes = _modes(stream_mode, stream_modes)
    resume = _parse_last_event_id(last_event_id)
    await thread_info_or_404(context, thread_id, user)
    done = await _start_point(manager_of(context), user, thread_id, resume[0])
    return EventStreamResponse(_events(context, user, thread_id, modes, done, resume))
