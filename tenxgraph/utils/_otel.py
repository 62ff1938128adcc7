"""Whether tenxgraph traces, and its tracer: the one check every span of the package goes through.

``tracer()`` is None unless ``opentelemetry`` is already imported *and* a
tracer provider is set (an SDK's, or one that auto-instrumentation
installed): untraced, nothing is imported and nothing created, at the cost of
one dictionary lookup. It sits below every floor so the storage floor (media
puts, memory searches) and the graph's spans (``core/graph/_tracing.py``)
share the decision. ``spanned`` is the storage floor's one kind of span: an
internal span under the current one, around one awaited call.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

__all__ = ["CONTENT_ENV", "content_from_env", "spanned", "tracer"]

T = TypeVar("T")

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' switch for recording message content; a run config's
``trace_content`` wins over it where a run's config is known."""

_cached: list[Any] = [None, None]
"""The last provider seen and its tracer: ``get_tracer`` once per provider, not per run."""


def tracer() -> Tracer | None:
    """The tracer of tenxgraph's spans, when OpenTelemetry is imported and a provider is set."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if _cached[0] is provider:
        return _cached[1]  # type: ignore[no-any-return]
    found = None
    if not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        # The package is imported before any of its modules: its version without importing it
        # (the top floor's ``__init__`` would be an import from below).
        version = getattr(sys.modules.get("tenxgraph"), "__version__", None)
        found = provider.get_tracer("tenxgraph", version)
    _cached[:] = [provider, found]
    return found


def content_from_env() -> bool:
    """Whether the environment opts in to recording content (``CONTENT_ENV``)."""
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("true", "1", "yes")


async def spanned(
    name: str,
    attributes: Mapping[str, Any],
    running: Awaitable[T],
    after: Callable[[T], Mapping[str, Any]],
) -> T:
    """Await ``running`` in a span ``name`` under the current span (call only when traced).

    ``after(result)`` gives the attributes known only at the end; an exception
    fails the span with its class as ``error.type``.
    """
    from opentelemetry import trace

    found = tracer()
    assert found is not None, "spanned() is called only when tracer() found a provider"
    span = found.start_span(name, attributes=dict(attributes))
    try:
        result = await running
        span.set_attributes(dict(after(result)))
        return result
    except asyncio.CancelledError:
        span.set_attribute("tenxgraph.cancelled", True)
        raise
    except BaseException as exc:
        span.set_attribute("error.type", type(exc).__qualname__)
        if isinstance(exc, Exception):
            span.record_exception(exc)
        span.set_status(trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:200])
        raise
    finally:
        span.end()
