"""The spans of the server's recent runs, kept in memory: a run's trace seen without a backend.

``RecentSpans`` is an OpenTelemetry SDK span processor: added to the
process's tracer provider, it keeps every finished span of the last
``limit`` traces (oldest dropped first, at most ``MAX_SPANS`` each), and
notes where each run's ``invoke_agent`` span sits, so ``run_trace`` can
answer one run's spans, its subgraphs' and tools' included, as a flat list
with parent ids (``GET /threads/{id}/runs/{run_id}/trace``).

**Free when off.** Nothing imports this module unless the server keeps traces
(``keep_traces``): the runtime's spans exist only under a tracer provider, so
keeping them means one is set; the processor only copies a few fields of each
span into a dictionary, under a lock, when the span ends.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from tenxgraph.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span

__all__ = ["MAX_SPANS", "RecentSpans", "keep_recent", "kept"]

MAX_SPANS = 2000
"""Spans kept of one trace: a runaway run cannot fill the server's memory."""

_RUN_ID = "tenxgraph.run.id"


class RecentSpans(SpanProcessor):
    """The finished spans of the last ``limit`` traces, and where each run's span is."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        self._runs: OrderedDict[str, tuple[int, int, dict[str, Any]]] = OrderedDict()
        """run id -> (trace id, its span id, the span while it is open)."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        run_id = (span.attributes or {}).get(_RUN_ID)
        if not isinstance(run_id, str):
            return
        context = span.get_span_context()
        with self._lock:
            if run_id not in self._runs:  # a run's first span is its own (a retry's is a child)
                self._runs[run_id] = (context.trace_id, context.span_id, _shape(span))
            while len(self._runs) > self.limit * 4:
                self._runs.popitem(last=False)

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None:
            return
        shaped = _shape(span)
        with self._lock:
            spans = self._traces.get(span.context.trace_id)
            if spans is None:
                spans = self._traces[span.context.trace_id] = []
                while len(self._traces) > self.limit:
                    self._traces.popitem(last=False)
            if len(spans) < MAX_SPANS:
                spans.append(shaped)

    def run_trace(self, run_id: str) -> dict[str, Any] | None:
        """The spans of run ``run_id`` (its own first), earliest first; None when not kept.

        A run still going has its own span as ``end: null``, and only its
        finished spans under it.
        """
        with self._lock:
            found = self._runs.get(run_id)
            if found is None:
                return None
            trace_id, root, opened = found
            spans = list(self._traces.get(trace_id, ()))
        by_parent: dict[str | None, list[dict[str, Any]]] = {}
        own = next((span for span in spans if span["span_id"] == f"{root:016x}"), opened)
        for span in spans:
            by_parent.setdefault(span["parent_id"], []).append(span)
        tree = [own]
        pending = [own["span_id"]]
        while pending:
            for child in by_parent.get(pending.pop(), ()):
                tree.append(child)
                pending.append(child["span_id"])
        tree[1:] = sorted(tree[1:], key=lambda span: span["start"])
        return {"run_id": run_id, "trace_id": f"{trace_id:032x}", "spans": tree}


def _shape(span: ReadableSpan) -> dict[str, Any]:
    """The JSON of a span: ids in hex, times in Unix nanoseconds, attributes and events."""
    context = span.context
    parent = span.parent
    return {
        "name": span.name,
        "span_id": f"{context.span_id:016x}" if context else None,
        "parent_id": f"{parent.span_id:016x}" if parent else None,
        "start": span.start_time,
        "end": span.end_time,
        "status": span.status.status_code.name.lower(),
        "attributes": {key: _plain(value) for key, value in (span.attributes or {}).items()},
        "events": [
            {"name": item.name, "time": item.timestamp, "attributes": dict(item.attributes or {})}
            for item in span.events
        ],
    }


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


_kept: list[RecentSpans] = []
"""The process's one store (a server's workers in one process share it)."""


def kept() -> RecentSpans | None:
    """The store of recent spans, when this process keeps them."""
    return _kept[0] if _kept else None


def keep_recent(limit: int | None) -> RecentSpans | None:
    """Keep the spans of the last ``limit`` traces; None: only when a provider is already set.

    With a tracer provider of the SDK already set (the user's, exporting to
    their backend), the store is added to it. With none set, a ``limit`` sets
    one that only keeps (None keeps nothing: tracing stays off and free). A
    provider that is not the SDK's cannot take a processor: a clear error.
    """
    provider = trace.get_tracer_provider()
    unset = isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
    if limit == 0 or (limit is None and unset):
        return None
    if not unset and not isinstance(provider, TracerProvider):
        raise ConfigError(
            f"keep_traces needs OpenTelemetry's SDK tracer provider, not {type(provider).__name__}"
        )
    store = kept()
    if store is None:
        store = RecentSpans(limit or 100)
        _kept.append(store)
    elif limit is not None:
        store.limit = max(store.limit, limit)
    if unset:
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if store not in getattr(provider, "_tenxgraph_kept", ()):
        provider.add_span_processor(store)  # type: ignore[attr-defined]
        provider._tenxgraph_kept = [store]  # type: ignore[attr-defined]
    return store
