"""W3C trace context at the server's edge: a run continues the trace of the request that made it.

A run request's ``traceparent`` (and ``tracestate``) headers are kept with
the run, in its ``kwargs`` under ``trace_context``: in memory, and in the
Postgres queue's stored request, so a background run that another worker
claims continues the same trace. When the run starts, its writer makes
that context current around the graph's run, and the runtime's
``invoke_agent`` span (``core/graph/_tracing.py``) becomes its child. A
header that is not W3C's format is ignored, as the recommendation says.

Nothing here imports OpenTelemetry unless the process already did (a tracer
provider is set): a server without tracing only copies two headers.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

__all__ = ["TRACE_KEY", "continued", "incoming"]

TRACE_KEY = "trace_context"
"""The run's ``kwargs`` key holding the request's W3C headers."""

_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
_MAX_TRACESTATE = 512
"""W3C: at most 32 members; a longer header is dropped rather than cut."""


def incoming(headers: Mapping[str, str]) -> dict[str, str] | None:
    """The W3C trace headers of a request, when its ``traceparent`` is well formed; else None."""
    parent = headers.get("traceparent", "").strip().lower()
    if not _TRACEPARENT.fullmatch(parent) or parent.startswith("ff"):
        return None
    carrier = {"traceparent": parent}
    state = headers.get("tracestate", "").strip()
    if state and len(state) <= _MAX_TRACESTATE:
        carrier["tracestate"] = state
    return carrier


def continued(carrier: Any) -> AbstractContextManager[None]:
    """Make the trace context ``carrier`` names current (when tracing is set up), then restore.

    A span of the same trace already current (an ASGI instrumentation's
    server span, itself the child of the header) is kept: it is the nearer parent.
    Without tracing or a carrier (most runs), a shared context that does nothing.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None or not isinstance(carrier, dict) or "traceparent" not in carrier:
        return _NOTHING
    return _continued(trace, carrier)


_NOTHING = nullcontext()


@contextmanager
def _continued(trace: Any, carrier: dict[str, Any]) -> Iterator[None]:
    from opentelemetry import context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    found = TraceContextTextMapPropagator().extract(
        {k: v for k, v in carrier.items() if isinstance(v, str)}
    )
    remote = trace.get_current_span(found).get_span_context()
    here = trace.get_current_span().get_span_context()
    if not remote.is_valid or here.trace_id == remote.trace_id:
        yield
        return
    previous = context.get_current()
    context.attach(found)
    try:
        yield
    finally:
        context.attach(previous)  # not detached by token: see core/graph/_tracing._restore
