"""Turn a server's runs durable and shared by its workers: ``install`` (``--postgres``).

``tenxgraph serve --postgres DSN [--redis URL]`` calls it in each worker
(through ``app_from_env``); an app made with ``create_app`` can call it
itself. See docs/server.md, "Scaling out". The durable run registry
(``tenxgraph.runs.DurableRunManager``) gets the server's ``RunParts`` and
its ``ServerTransport``: run events through Redis Streams, claimed runs
rebuilt from their stored request, followers of other workers' runs, and
the relay of browser-side tool results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from tenxgraph.runs import CONSUMERS, DurableRunManager, RunRecord, RunSpec
from tenxgraph.server._claimed_runs import resumed
from tenxgraph.server._event_log import EventLog, EventLogLimits
from tenxgraph.server._redis_events import RedisStreamWriter
from tenxgraph.server._run_followers import RunFollowers
from tenxgraph.server._run_parts import SERVER_PARTS
from tenxgraph.server._run_stream import StreamEncoder
from tenxgraph.server._tool_relay import ToolResultRelay

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.runs import ClaimedRun, PgRunQueue, RunLog
    from tenxgraph.server._context import ServerContext
    from tenxgraph.server._redis_events import RedisEvents

__all__ = ["ServerTransport", "install", "pool_sizes"]


def pool_sizes(consumers: int) -> tuple[int, int]:
    """The most connections of a worker's pools for ``consumers`` runs: checkpointer's, queue's.

    Decision. A worker's runs share one event loop, so how many of its
    statements are in flight is bounded by how fast that loop sends them,
    not by how many runs wait on tools: a connection per 10 runs, 2 to 10,
    for the checkpointer (a busy call waits for the next one free), and one
    per 25, 2 to 4, for the run queue (claims, the lease beat, outcomes).
    With the default 100 consumers that is 10 + 4, one more listening for
    notifications and the assistants' 2: five workers stay within a default
    Postgres's 100 connections (docs/server.md, "Connections").
    """
    return min(10, max(2, -(-consumers // 10))), min(4, max(2, -(-consumers // 25)))


class ServerTransport:
    """How the server's workers share runs: Redis for events (when given), Postgres for letters."""

    def __init__(self, graph: CompiledGraph[Any], events: RedisEvents | None) -> None:
        self.graph, self.events = graph, events
        self.encoder = StreamEncoder()

    def log(self, run_id: str, limits: Any, start_after: int | None) -> RunLog:
        if self.events is None:
            return EventLog(limits)
        return RedisStreamWriter(self.events, run_id, limits, start_after=start_after)

    async def flushed(self, log: RunLog) -> None:
        if isinstance(log, RedisStreamWriter):
            await log.flushed()

    def hand_back(self, log: RunLog) -> None:
        if isinstance(log, RedisStreamWriter):
            log.hand_back = True

    async def start_after(self, run_id: str, attempt: int) -> int | None:
        return await self.events.start_after(run_id, attempt) if self.events else 0

    async def resume(self, claim: ClaimedRun) -> RunSpec | tuple[str, Any]:
        return await resumed(self.graph, self.encoder, claim)

    def relay(
        self,
        queue: PgRunQueue,
        worker_id: str,
        held: Callable[[str], RunRecord | None],
        held_ids: Callable[[], list[str]],
    ) -> ToolResultRelay:
        return ToolResultRelay(queue, worker_id, held, held_ids)

    def followers(
        self,
        queue: PgRunQueue,
        limits: Any,
        poll_seconds: float,
        spawn: Callable[[Any], asyncio.Task[Any]],
    ) -> RunFollowers:
        return RunFollowers(
            self.graph, queue, self.events, cast(EventLogLimits, limits), poll_seconds, spawn
        )

    async def aclose(self) -> None:
        if self.events is not None:
            await self.events.aclose()


def install(
    context: ServerContext,
    postgres: str,
    redis: str | None = None,
    *,
    schema: str = "tenxgraph",
    prefix: str = "tenxgraph:runs:",
    consumers: int = CONSUMERS,
    lease_seconds: float | None = 15.0,
    poll_seconds: float = 0.25,
) -> DurableRunManager:
    """Make the app's runs durable: a run table in ``postgres``, streams through ``redis``.

    Puts a ``DurableRunManager`` where the run routes find their manager
    (``context.state["runs"]``) and starts and stops it with the server.
    The run table is kept beside the graph's threads: ``postgres`` is the
    database of the graph's ``PgCheckpointer``, and ``schema`` its schema
    (the checkpointer's own is used when it says one), because a running
    run's owner is its thread's lease row. ``lease_seconds`` is the thread
    lease of the runs served (None: the graph's): how long the run of a
    worker that died waits before another worker resumes it. The run
    queue's pool follows ``consumers`` (``pool_sizes``); the graph's
    checkpointer keeps the pool it was made with.
    """
    from tenxgraph.runs import PgRunQueue
    from tenxgraph.server._metrics import metrics_of
    from tenxgraph.server._redis_events import RedisEvents
    from tenxgraph.server.runs import run_options

    schema = str(getattr(context.graph.checkpointer, "schema", None) or schema)
    queue = PgRunQueue(postgres, schema=schema, pool_size=pool_sizes(consumers)[1])
    events = RedisEvents(redis, prefix=prefix) if redis else None
    manager = DurableRunManager(
        context.graph,
        queue,
        SERVER_PARTS,
        ServerTransport(context.graph, events),
        **run_options(context),
        consumers=consumers,
        poll_seconds=poll_seconds,
        lease_seconds=lease_seconds,
    )
    context.state["runs"] = manager
    # Redis is no readiness check: runs go on without it (see RedisEvents), and a balancer
    # that took every worker out while it is down would stop them all.
    context.state.setdefault("ready_checks", []).append(("run queue (postgres)", queue.ping))
    manager.on_ended = metrics_of(context).observe
    use_loop = getattr(context.graph.checkpointer, "use_running_loop", None)
    if use_loop is not None:  # every run goes on the server's loop: its saves too, with no hop
        context.on_startup.append(use_loop)
    context.on_startup.append(manager.open)
    context.on_shutdown.append(manager.aclose)
    return manager
