"""``GET /metrics``: the server's runs in the Prometheus text format.

Decision: Prometheus text, with the official ``prometheus-client`` library.
It is what uvicorn/gunicorn deployments are scraped with without an extra
agent or collector (Kubernetes, the Prometheus operator, Grafana Agent,
Datadog and OpenTelemetry collectors all read it), and it needs no
configuration in the app. OpenTelemetry would add an SDK and an exporter
to run in every worker for the same three series.

Each app has its own registry (no process-global one: two apps in a process
report apart). Series:

- ``tenxgraph_runs{status}``: runs per status. With the durable run table
  (``--postgres``) these count the whole deployment's table, so any worker
  answers for all; otherwise this process's runs.
- ``tenxgraph_run_queue_depth``: runs no live worker holds (waiting for a
  consumer, or left by a dead worker); 0 without the run table.
- ``tenxgraph_worker_runs``: runs this worker holds now.
- ``tenxgraph_run_seconds{status}``: a histogram of run latency (created to
  ended) of the runs this worker ended.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

if TYPE_CHECKING:
    from tenxgraph.runs import RunRecord
    from tenxgraph.server._context import ServerContext

__all__ = ["RunMetrics", "metrics_of", "router"]

router = APIRouter(tags=["health"])

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Run latency buckets (seconds): agent runs take from a moment to minutes."""


class RunMetrics:
    """The registry of one app and its series."""

    def __init__(self) -> None:
        """Make the registry and the series."""
        from prometheus_client import CollectorRegistry, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "tenxgraph_run_seconds",
            "Run latency, from created to ended, of the runs this worker ended.",
            ["status"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.runs = Gauge("tenxgraph_runs", "Runs per status.", ["status"], registry=self.registry)
        self.depth = Gauge(
            "tenxgraph_run_queue_depth",
            "Runs no live worker holds (waiting for a worker).",
            registry=self.registry,
        )
        self.held = Gauge(
            "tenxgraph_worker_runs", "Runs this worker holds now.", registry=self.registry
        )

    def observe(self, record: RunRecord) -> None:
        """Count a run that ended here."""
        try:
            created = dt.datetime.fromisoformat(record.created_at)
        except ValueError:
            return
        seconds = (dt.datetime.now(dt.UTC) - created).total_seconds()
        self.latency.labels(status=record.status).observe(max(seconds, 0.0))

    async def render(self, context: ServerContext) -> bytes:
        """The text exposition, with the gauges read now."""
        from prometheus_client import generate_latest

        from tenxgraph.server.runs import manager_of

        manager: Any = manager_of(context)
        local = list(manager._runs.values())
        self.held.set(sum(1 for r in local if not r.finished))
        queue = getattr(manager, "queue", None)
        if queue is not None:
            stats = await queue.stats()
            counts: dict[str, int] = stats.by_status
            self.depth.set(stats.claimable)
        else:
            counts = dict(Counter(r.status for r in local))
            self.depth.set(0)
        for status in ("pending", "running", "success", "error", "interrupted", "timeout"):
            self.runs.labels(status=status).set(counts.get(status, 0))
        return bytes(generate_latest(self.registry))


def metrics_of(context: ServerContext) -> RunMetrics:
    """The app's metrics, made on first use."""
    metrics: RunMetrics | None = context.state.get("metrics")
    if metrics is None:
        metrics = context.state["metrics"] = RunMetrics()
    return metrics


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus text exposition (no key needed, like ``/ready``)."""
    from prometheus_client import CONTENT_TYPE_LATEST

    context: ServerContext = request.app.state.context
    body = await metrics_of(context).render(context)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
