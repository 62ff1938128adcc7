"""A server run continues the W3C ``traceparent`` of its request (``server/_tracing.py``).

The servers run in this process (uvicorn threads), so their spans reach the
test's in-memory exporter. A background run on the Postgres queue is in
``scale/test_queue_tracing.py``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
from opentelemetry.sdk.trace import ReadableSpan

from tenxgraph.server._tracing import incoming
from tests.server.conftest import Serve
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
AGENT = "agent"


def user_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def run_span(spans: Spans, timeout: float = 30) -> ReadableSpan:
    """The run's ``invoke_agent`` span, once it ended (a run's span ends after its last event)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [span for span in spans.all() if span.name.startswith("invoke_agent")]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no run span: {spans.tree()}")


def _root(spans: Spans, span: ReadableSpan) -> ReadableSpan:
    """The farthest ancestor of ``span`` among the spans kept."""
    by_id = {kept.context.span_id: kept for kept in spans.all()}
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
    return span


def test_a_streamed_run_continues_the_requests_trace(serve: Serve, spans: Spans) -> None:
    headers = {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
    body = {"assistant_id": AGENT, "input": user_input("hello"), "if_not_exists": "create"}
    with httpx.Client(base_url=serve(), timeout=60) as client:
        answer = client.post("/threads/t1/runs/stream", json=body, headers=headers)
    assert answer.status_code == 200
    assert "echo: hello" in answer.text
    run = run_span(spans)
    assert f"{run.context.trace_id:032x}" == TRACE_ID
    root = _root(spans, run)  # FastAPI's own server span, when its instrumentation is on
    assert root.parent is not None and root.parent.is_remote
    assert f"{root.parent.span_id:016x}" == PARENT_ID
    chat = spans.one("chat function")
    assert chat.context.trace_id == run.context.trace_id
    assert chat.attributes is not None and "gen_ai.input.messages" not in chat.attributes


def test_a_run_without_a_valid_traceparent_starts_its_own_trace(serve: Serve, spans: Spans) -> None:
    body = {"assistant_id": AGENT, "input": user_input("hi"), "if_not_exists": "create"}
    with httpx.Client(base_url=serve(), timeout=60) as client:
        headers = {"traceparent": "00-not-a-trace-01"}
        assert client.post("/threads/t2/runs/wait", json=body, headers=headers).is_success
        run = client.get("/threads/t2/runs").json()[0]
    assert "trace_context" not in run["kwargs"]
    span = run_span(spans)
    root = _root(spans, span)
    assert root.parent is None
    assert f"{span.context.trace_id:032x}" != TRACE_ID


def test_a_client_cannot_turn_content_recording_on(serve: Serve, spans: Spans) -> None:
    """What the traces hold is the server's choice (its environment), not a request's."""
    body = {
        "assistant_id": AGENT,
        "input": user_input("my secret question"),
        "if_not_exists": "create",
        "config": {"trace_content": True},
    }
    with httpx.Client(base_url=serve(), timeout=60) as client:
        assert client.post("/threads/t3/runs/wait", json=body).is_success
    run_span(spans)
    assert "my secret question" not in repr([s.attributes for s in spans.all()])


def test_incoming_keeps_only_w3c_headers() -> None:
    assert incoming({"traceparent": TRACEPARENT}) == {"traceparent": TRACEPARENT}
    assert incoming({"traceparent": TRACEPARENT.upper()}) == {"traceparent": TRACEPARENT}
    assert incoming({"traceparent": "ff" + TRACEPARENT[2:]}) is None  # a forbidden version
    assert incoming({"traceparent": TRACEPARENT + "-x"}) is None
    assert incoming({}) is None
    long_state = {"traceparent": TRACEPARENT, "tracestate": "a=" + "b" * 600}
    assert incoming(long_state) == {"traceparent": TRACEPARENT}
