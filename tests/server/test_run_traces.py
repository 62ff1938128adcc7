"""A run's spans, kept by the server and answered by ``GET /threads/{id}/runs/{run_id}/trace``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace

from tenxgraph.cli.main import main
from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import ToolCallBlock
from tenxgraph.server._recent_spans import RecentSpans
from tenxgraph.storage.checkpointer.base import Checkpointer
from tests.server.conftest import Serve
from tests.tracing import Spans, reset_globals, spans_fixture  # noqa: F401 - the fixture


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _agent(checkpointer: Checkpointer) -> Any:
    call = ToolCallBlock(id="call-1", name="add", args={"a": 2, "b": 3})
    model = ScriptedModel([call, "5"], model="gpt-test", provider="openai")
    return create_agent(model, [add], checkpointer=checkpointer)


def _run(client: httpx.Client, thread: str) -> str:
    body = {
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": "2+3?"}]},
        "if_not_exists": "create",
    }
    answer = client.post(f"/threads/{thread}/runs/wait", json=body)
    assert answer.is_success, answer.text
    return str(client.get(f"/threads/{thread}/runs").json()[0]["run_id"])


def _trace(client: httpx.Client, thread: str, run_id: str) -> dict[str, Any]:
    """The run's trace, once its own span ended (it ends just after the run's last event)."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.get(f"/threads/{thread}/runs/{run_id}/trace")
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        if found["spans"][0]["end"] is not None or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_the_server_keeps_a_runs_spans_for_its_own_route(serve: Serve, spans: Spans) -> None:
    with httpx.Client(base_url=serve(_agent), timeout=60) as client:
        run_id = _run(client, "t1")
        found = _trace(client, "t1", run_id)
        other = client.get("/threads/t1/runs/no-such-run/trace")
    assert other.status_code == 404
    assert found["run_id"] == run_id
    kept = found["spans"]
    run = kept[0]
    assert run["name"].startswith("invoke_agent") and run["end"] is not None
    assert run["attributes"]["tenxgraph.run.id"] == run_id
    names = [span["name"] for span in kept]
    assert names.count("node agent") == 2 and "execute_tool add" in names
    by_id = {span["span_id"]: span for span in kept}
    chat = next(span for span in kept if span["name"] == "chat gpt-test")
    assert by_id[chat["parent_id"]]["name"] == "node agent"
    assert chat["attributes"]["gen_ai.usage.output_tokens"] > 0
    assert all(span["parent_id"] in by_id for span in kept[1:])
    assert {span["end"] is not None for span in kept} == {True}


def test_threads_show_trace_prints_the_span_tree_with_durations(
    serve: Serve, spans: Spans, capsys: pytest.CaptureFixture[str]
) -> None:
    url = serve(_agent)
    with httpx.Client(base_url=url, timeout=60) as client:
        run_id = _run(client, "t4")
        _trace(client, "t4", run_id)
    assert main(["threads", "show", "t4", "--trace", run_id, "--url", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert run_id in lines[0]
    assert lines[1].startswith("invoke_agent") and "completed" in lines[1]
    chat = next(line for line in lines if line.startswith("    chat gpt-test"))
    assert re.search(r"\d ms  tokens \d+ in / \d+ out  tool_calls", chat)
    assert any(line.startswith("    execute_tool add") for line in lines)
    assert main(["threads", "show", "t4", "--trace", "nope", "--url", url]) == 1
    assert "no trace of run 'nope'" in capsys.readouterr().err


def test_a_server_without_traces_kept_answers_404(serve: Serve) -> None:
    with httpx.Client(base_url=serve(_agent, keep_traces=0), timeout=60) as client:
        run_id = _run(client, "t2")
        answer = client.get(f"/threads/t2/runs/{run_id}/trace")
    assert answer.status_code == 404
    assert "keeps no traces" in answer.text or "not among" in answer.text


@pytest.fixture
def no_provider() -> Iterator[None]:
    reset_globals()
    try:
        yield
    finally:
        provider = trace.get_tracer_provider()
        shutdown = getattr(provider, "shutdown", None)
        if shutdown is not None:
            shutdown()
        reset_globals()


def test_keep_traces_sets_a_provider_when_none_is(serve: Serve, no_provider: None) -> None:
    with httpx.Client(base_url=serve(_agent, keep_traces=5), timeout=60) as client:
        run_id = _run(client, "t3")
        found = _trace(client, "t3", run_id)
    assert [span["name"] for span in found["spans"]].count("execute_tool add") == 1


def test_the_store_keeps_only_the_last_traces() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    store = RecentSpans(2)
    provider = TracerProvider()
    provider.add_span_processor(store)
    tracer = provider.get_tracer("test")
    for number in range(4):
        run = {"tenxgraph.run.id": f"r{number}"}
        with tracer.start_as_current_span("run", attributes=run), tracer.start_span("step"):
            pass
    assert store.run_trace("r0") is not None  # its own span, but none of its children
    assert [span["name"] for span in store.run_trace("r3")["spans"]] == ["run", "step"]  # type: ignore[index]
    assert len(store.run_trace("r0")["spans"]) == 1  # type: ignore[index]
