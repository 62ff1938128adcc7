"""End to end with a tracing backend no one here wrote: Arize Phoenix, over OTLP/HTTP.

The test starts ``phoenix serve`` on spare ports, exports the spans of a
``tenxgraph serve`` run to it with the OpenTelemetry SDK's OTLP exporter, and
reads the trace back with Phoenix's own client (``phoenix.client.Client``): the
run, its model calls and its tool call, under the caller's ``traceparent``.

Phoenix is large (about 860 MB with its dependencies, some of which pin other
versions of packages the suite uses), so it is not an extra: it lives in a
virtual environment of its own: ``make phoenix`` makes it in ``.cache/phoenix``
(CI does), or ``TENXGRAPH_PHOENIX`` names another one's ``phoenix`` command, else
it is found on ``PATH``. Without it the test skips, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import ToolCallBlock
from tenxgraph.testing.server import free_port
from tests.server.conftest import Serve
from tests.tracing import reset_globals

MADE = Path(__file__).resolve().parents[2] / ".cache" / "phoenix" / "bin" / "phoenix"
PHOENIX = (
    os.environ.get("TENXGRAPH_PHOENIX")
    or (str(MADE) if MADE.exists() else None)
    or shutil.which("phoenix")
)
TRACE_ID = "6bf92f3577b34da6a3ce929d0e0e4738"
PROJECT = "tenxgraph-e2e"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PHOENIX is None,
        reason="Arize Phoenix is not installed (`make phoenix`, or pip install arize-phoenix in "
        "a venv of its own and TENXGRAPH_PHOENIX=<that venv>/bin/phoenix)",
    ),
]


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[str]:
    """``phoenix serve`` on spare ports, its data in the test's directory; its base URL."""
    assert PHOENIX is not None
    port, grpc_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    env = {
        **os.environ,
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (tmp_path / "phoenix.log").open("w")
    process = subprocess.Popen([PHOENIX, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # a first start migrates its database
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "phoenix.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("phoenix did not start: " + (tmp_path / "phoenix.log").read_text())
        yield url
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture
def exporting(phoenix: str) -> Iterator[TracerProvider]:
    """The global tracer provider exporting to Phoenix over OTLP/HTTP, for this test only."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create(
        {"service.name": "tenxgraph-test", "openinference.project.name": PROJECT}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    reset_globals()
    trace.set_tracer_provider(provider)
    try:
        yield provider
    finally:
        provider.shutdown()
        reset_globals()


def _read_back(phoenix: str) -> list[dict[str, Any]]:
    """The project's spans, read with Phoenix's own client in Phoenix's own environment."""
    assert PHOENIX is not None
    python = str(Path(PHOENIX).with_name("python"))
    code = (
        "import json, sys; from phoenix.client import Client; "
        f"spans = Client(base_url={phoenix!r}).spans.get_spans(project_identifier={PROJECT!r}, "
        "limit=100); json.dump(spans, sys.stdout, default=str)"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    spans: list[dict[str, Any]] = json.loads(done.stdout)
    return spans


def test_a_served_runs_trace_is_read_back_from_phoenix(
    serve: Serve, phoenix: str, exporting: TracerProvider
) -> None:
    def graph(checkpointer: Any) -> Any:
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        call = ToolCallBlock(id="call-7", name="add", args={"a": 2, "b": 5})
        model = ScriptedModel([call, "7"], model="gpt-e2e", provider="openai")
        return create_agent(model, [add], checkpointer=checkpointer)

    body = {
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": "2+5?"}]},
        "if_not_exists": "create",
    }
    headers = {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}
    with httpx.Client(base_url=serve(graph), timeout=60) as client:
        assert client.post("/threads/e2e/runs/wait", json=body, headers=headers).is_success
    deadline = time.monotonic() + 60
    spans: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        exporting.force_flush()
        spans = [s for s in _read_back(phoenix) if s["context"]["trace_id"] == TRACE_ID]
        if any(s["name"].startswith("invoke_agent") for s in spans):
            break
        time.sleep(1)
    names = {span["name"] for span in spans}
    assert {"chat gpt-e2e", "execute_tool add", "node agent", "node tools"} <= names, names
    chat = next(span for span in spans if span["name"] == "chat gpt-e2e")
    assert chat["attributes"]["gen_ai.request.model"] == "gpt-e2e"
    assert chat["attributes"]["gen_ai.usage.output_tokens"] > 0
    tool = next(span for span in spans if span["name"] == "execute_tool add")
    assert tool["attributes"]["gen_ai.tool.call.id"] == "call-7"
