"""The OpenTelemetry SDK set up for one test: spans kept in memory, the global provider put back.

OpenTelemetry lets a process set its global tracer provider once; a test sets
it for its own duration and resets it after (the SDK's own tests do the same
through the private globals), so the rest of the suite runs untraced.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

__all__ = ["Spans", "reset_globals", "spans_fixture"]


class Spans:
    """The spans finished so far, and the tree they make."""

    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider

    def all(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.all() if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.tree()}"
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        own = parent.context.span_id
        found = [s for s in self.all() if s.parent is not None and s.parent.span_id == own]
        return sorted(found, key=lambda span: span.start_time or 0)

    def tree(self) -> str:
        """The spans as an indented outline, for failure messages."""
        lines: list[str] = []
        ids = {span.context.span_id for span in self.all() if span.context is not None}

        def walk(span: ReadableSpan, depth: int) -> None:
            lines.append("  " * depth + span.name)
            for child in self.children(span):
                walk(child, depth + 1)

        for span in self.all():
            if span.parent is None or span.parent.span_id not in ids:
                walk(span, 0)
        return "\n" + "\n".join(lines)


def reset_globals() -> None:
    """No global tracer provider, and one may be set again."""
    trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    trace._TRACER_PROVIDER_SET_ONCE = Once()  # type: ignore[attr-defined]


@pytest.fixture(name="spans")
def spans_fixture() -> Iterator[Spans]:
    """A global tracer provider exporting to memory for this test only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reset_globals()
    trace.set_tracer_provider(provider)
    try:
        yield Spans(exporter, provider)
    finally:
        provider.shutdown()
        reset_globals()
