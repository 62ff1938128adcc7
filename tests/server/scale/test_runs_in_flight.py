"""One worker keeps many queued runs in flight at once, as asyncio tasks, up to its ``consumers``.

The runs wait (as on a model or a tool) until as many as the worker may run
are running together: that only ends if the worker claimed them all, and
no later run may start before one of them ended.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.testing.server import served

from .conftest import PG_DSN, REDIS_URL

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

LIMIT = 12
RUNS = 30


class Gauge:
    """Runs inside the node now, the most at once, and whether ``LIMIT`` were reached together."""

    def __init__(self) -> None:
        self.now = self.peak = 0
        self.reached = False
        self._full: asyncio.Event | None = None  # made in the server's loop

    async def node(self, state: AgentState) -> Message:
        if self._full is None:
            self._full = asyncio.Event()
        self.now += 1
        self.peak = max(self.peak, self.now)
        if self.now == LIMIT:
            self.reached = True
            self._full.set()
        try:  # waits, as a run on a model or a tool does
            await asyncio.wait_for(self._full.wait(), 60)
        finally:
            self.now -= 1
        return Message.text_message(f"done {state.context[-1].text()}", role="assistant")


def _app(schema: str, prefix: str, gauge: Gauge) -> Any:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

    graph = StateGraph(AgentState)
    graph.add_node("wait", gauge.node)
    graph.set_entry_point("wait")
    checkpointer = PgCheckpointer(PG_DSN, schema=schema, pool_size=4)
    app = create_app(graph.compile(checkpointer), graph_id="agent")
    app.state.context.on_shutdown.append(checkpointer.aclose)
    install(app.state.context, PG_DSN, REDIS_URL, schema=schema, prefix=prefix, consumers=LIMIT)
    return app


def test_a_worker_runs_its_consumers_worth_of_queued_runs_together(
    schema: str, prefix: str
) -> None:
    gauge = Gauge()
    with served(_app(schema, prefix, gauge)) as url, httpx.Client(base_url=url, timeout=30) as c:
        body = {"assistant_id": "agent", "if_not_exists": "create"}
        runs = []
        for k in range(RUNS):
            given = {**body, "input": {"messages": [{"role": "user", "content": f"job-{k}"}]}}
            runs.append((f"t{k}", c.post(f"/threads/t{k}/runs", json=given).json()["run_id"]))
        deadline = time.monotonic() + 120
        for thread, run_id in runs:
            while (status := c.get(f"/threads/{thread}/runs/{run_id}").json()["status"]) in (
                "pending",
                "running",
            ) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert status == "success"
        thread = c.get("/threads/t3").json()
    assert gauge.reached  # LIMIT runs were in the node together
    assert gauge.peak == LIMIT  # and never more
    assert thread["metadata"]["graph_id"] == "agent"  # the claimed run named its graph
