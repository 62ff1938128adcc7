"""``GET /threads/{thread_id}/runs/{run_id}/trace``: a run's spans, from those the server keeps.

tenxgraph's own route (LangGraph's API has none). The server keeps the spans
of its recent runs (``_recent_spans.py``) when ``create_app(keep_traces=...)``
says so, or when a tracer provider of OpenTelemetry's SDK is already set; the
answer is the run's spans as a flat list with parent ids, its own first.
"""

from __future__ import annotations

import sys
from typing import Any

from fastapi import APIRouter

from tenxgraph.errors import ConfigError
from tenxgraph.server._context import Context, User
from tenxgraph.server.http_errors import not_found
from tenxgraph.server.runs import run_or_404

__all__ = ["keep_traces", "router"]

router = APIRouter(tags=["runs"])


def keep_traces(limit: int | None) -> None:
    """Keep the spans of the last ``limit`` traces (0: never; None: when a provider is set).

    Without ``limit`` and without OpenTelemetry imported nothing is imported:
    a server that does not trace pays nothing.
    """
    if limit is not None and limit < 0:
        raise ConfigError(f"keep_traces must be 0 or more, got {limit}")
    if limit == 0 or (limit is None and "opentelemetry.trace" not in sys.modules):
        return
    try:
        from tenxgraph.server._recent_spans import keep_recent
    except ImportError as exc:
        if limit is None:
            return  # the API without the SDK: nothing records spans to keep
        raise ConfigError(
            "keeping traces needs OpenTelemetry's SDK: pip install opentelemetry-sdk"
        ) from exc
    keep_recent(limit)


@router.get("/threads/{thread_id}/runs/{run_id}/trace")
async def run_trace(thread_id: str, run_id: str, context: Context, user: User) -> dict[str, Any]:
    """The spans of one run: its nodes, model calls (with tokens) and tool calls."""
    await run_or_404(context, user, thread_id, run_id)
    store = sys.modules.get("tenxgraph.server._recent_spans")
    found = None if store is None else store.kept()
    if found is None:
        not_found(f"the trace of run {run_id!r}: this server keeps no traces (see keep_traces)")
    answer = found.run_trace(run_id)
    if answer is None:
        not_found(f"the trace of run {run_id!r}: not among the recent runs kept")
    return answer  # type: ignore[no-any-return]
