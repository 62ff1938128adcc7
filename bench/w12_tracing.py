"""W12: what OpenTelemetry tracing costs a run (docs/observability.md).

The W1 graph (3 nodes, no checkpointer) per ``invoke``, each case in a fresh process:

- ``untraced_us``: OpenTelemetry never imported (a plain script);
- ``api_no_provider_us``: ``opentelemetry.trace`` imported, no tracer provider set
  (a process whose server or SDK imports the API and never configures it);
- ``sdk_us``: the SDK's ``TracerProvider`` with a span processor handing every span to an
  exporter that drops it, so the figure is the spans' own cost, not an exporter's. A W1
  run makes 4 spans (the run and its three nodes): ``per_span_us`` is the difference
  from ``untraced_us`` over 4;
- ``sdk_bare_span_us``: the floor, one SDK span started and ended with no attributes.

Run: ``python -m bench.w12_tracing``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from bench._timing import best_us

SPANS_PER_RUN = 4
CASES = ("untraced", "api_no_provider", "sdk", "sdk_bare_span")


def _case(case: str) -> float:
    if case == "api_no_provider":
        import opentelemetry.trace  # noqa: F401 - imported, never configured
    elif case in ("sdk", "sdk_bare_span"):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import (
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class Dropped(SpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(Dropped()))
        trace.set_tracer_provider(provider)
        if case == "sdk_bare_span":  # the floor: one span started and ended, nothing else
            tracer = trace.get_tracer("floor")
            return best_us(lambda: tracer.start_span("span").end(), number=2_000)
    from bench.w1_invoke import three_nodes
    from tenxgraph.core.state import Message

    app = three_nodes()
    question = {"messages": [Message.text_message("hi")]}
    app.invoke(question)
    if case == "untraced":
        assert "opentelemetry" not in sys.modules
    return best_us(lambda: app.invoke(question), number=2_000)


def run() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for case in CASES:
        done = subprocess.run(
            [sys.executable, "-m", "bench.w12_tracing", "--case", case],
            capture_output=True,
            text=True,
            check=True,
        )
        found[f"{case}_us"] = json.loads(done.stdout)
    found["per_span_us"] = round((found["sdk_us"] - found["untraced_us"]) / SPANS_PER_RUN, 2)
    return found


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(json.dumps(_case(sys.argv[2])))
    else:
        print(run())
