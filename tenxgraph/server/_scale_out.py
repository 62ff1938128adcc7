"""Turn a server's runs durable and shared by its workers: ``install`` (``--postgres``).

``tenxgraph serve --postgres DSN [--redis URL]`` calls it in each worker
(through ``app_from_env``); an app made with ``create_app`` can call it
itself. See docs/server.md, "Scaling out".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tenxgraph.server._durable_runs import DurableRunManager

if TYPE_CHECKING:
    from tenxgraph.server._context import ServerContext

__all__ = ["install"]


def install(
    context: ServerContext,
    postgres: str,
    redis: str | None = None,
    *,
    schema: str = "tenxgraph",
    prefix: str = "tenxgraph:runs:",
    consumers: int = 4,
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
    worker that died waits before another worker resumes it.
    """
    from tenxgraph.runs import PgRunQueue
    from tenxgraph.server._metrics import metrics_of
    from tenxgraph.server._redis_events import RedisEvents
    from tenxgraph.server.runs import run_options

    schema = str(getattr(context.graph.checkpointer, "schema", None) or schema)
    queue = PgRunQueue(postgres, schema=schema)
    events = RedisEvents(redis, prefix=prefix) if redis else None
    manager = DurableRunManager(
        context.graph,
        queue,
        events,
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
    context.on_startup.append(manager.open)
    context.on_shutdown.append(manager.aclose)
    return manager
