"""The Python client sends the current span as ``traceparent``: the server's run joins its trace.

The server runs in this process, so the caller's span, the server's spans and
the run's land in the same in-memory exporter and form one tree.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from opentelemetry import trace

from tenxgraph.client import Client, SyncClient
from tests.clients.conftest import AGENT, ServeGraph
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}


def _run_traces(spans: Spans) -> list[int]:
    return [s.context.trace_id for s in spans.all() if s.name.startswith("invoke_agent")]


def test_a_sync_stream_and_an_async_wait_continue_the_callers_trace(
    serve_graph: ServeGraph, spans: Spans
) -> None:
    url = serve_graph()
    tracer = trace.get_tracer("caller")
    with tracer.start_as_current_span("caller: stream") as caller, SyncClient(url) as client:
        thread_id = client.threads.create()["thread_id"]
        assert list(client.runs.stream(thread_id, AGENT, input=user("hi")))
    streamed = caller.get_span_context().trace_id

    async def wait() -> int:
        with tracer.start_as_current_span("caller: wait") as span:
            async with Client(url) as client:
                await client.runs.wait(thread_id, AGENT, input=user("again"))
            return span.get_span_context().trace_id

    waited = asyncio.run(wait())
    deadline = time.monotonic() + 30  # a run's span ends just after its last event went out
    while len(_run_traces(spans)) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert streamed in _run_traces(spans) and waited in _run_traces(spans)


def test_without_a_current_span_no_traceparent_is_sent(
    serve_graph: ServeGraph, spans: Spans
) -> None:
    with SyncClient(serve_graph()) as client:
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(thread_id, AGENT, input=user("hi"))
        run = client.runs.list(thread_id)[0]
    assert "trace_context" not in run["kwargs"]
