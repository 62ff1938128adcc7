"""A background run finished by a second worker, after the first was killed -9, continues the trace.

The request that created the run carried a W3C ``traceparent``; the run is
kept with it in the Postgres queue. Worker A claims the run and is killed in
the middle of its first tool call; worker B, started after, claims it again
and finishes it. B keeps its traces (``TENXGRAPH_SERVE_TRACES``), so the
trace is read back from B's own route: its run span is the child of the
request's parent span, in the request's trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from .cluster import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def _wait(what: str, check: Callable[[], bool], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_a_run_resumed_by_another_worker_continues_the_requests_trace(tmp_path: Path) -> None:
    env = {"SCALE_TOOL_SECONDS": "5", "TENXGRAPH_SERVE_TRACES": "20"}
    with Cluster(tmp_path, env=env) as cluster:
        (doomed,) = cluster.start(1)
        thread = f"{cluster.tag}-0"
        body = {
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": "job-0"}]},
            "if_not_exists": "create",
        }
        headers = {"traceparent": TRACEPARENT}
        answer = httpx.post(f"{doomed}/threads/{thread}/runs", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        run_id = answer.json()["run_id"]
        _wait("the first worker to start the tool", lambda: cluster.held_by(doomed) == [run_id])
        cluster.kill(doomed)
        (staying,) = cluster.start(1)
        with httpx.Client(base_url=staying, timeout=30) as client:
            joined = client.get(f"/threads/{thread}/runs/{run_id}/join", timeout=120)
            assert joined.is_success, joined.text
            path = f"/threads/{thread}/runs/{run_id}/trace"

            def ended() -> bool:
                found = client.get(path)
                return found.status_code == 200 and found.json()["spans"][0]["end"] is not None

            _wait("the run's span to end", ended, 30)
            trace = client.get(path).json()
        attempts = cluster.rows()[run_id][1]

    assert attempts >= 2  # claimed again after the kill
    run = trace["spans"][0]
    assert trace["trace_id"] == TRACE_ID
    assert run["name"].startswith("invoke_agent")
    assert run["parent_id"] == PARENT_ID  # the request's span: no request around the claim
    assert run["attributes"]["tenxgraph.run.status"] == "completed"
    names = [span["name"] for span in trace["spans"]]
    assert "execute_tool slow_step" in names and "node agent" in names
