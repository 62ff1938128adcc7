"""A background run on the Postgres queue continues the trace of the request that created it.

The run is claimed from its stored request by whichever of two workers takes
it, with no request around it: its span's parent is the stored ``traceparent``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tenxgraph.testing.server import served
from tests.server.test_tracing import AGENT, PARENT_ID, TRACE_ID, TRACEPARENT, run_span, user_input
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture

from .conftest import PG_DSN, REDIS_URL

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _worker(schema: str, prefix: str) -> Any:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer
    from tests.clients.langgraph.graph import build

    checkpointer = PgCheckpointer(PG_DSN, schema=schema, pool_size=4)
    app = create_app(build(checkpointer), graph_id=AGENT)
    context = app.state.context
    context.on_shutdown.append(checkpointer.aclose)
    install(context, PG_DSN, REDIS_URL, schema=schema, prefix=prefix, lease_seconds=1.0)
    return app


@pytest.fixture
def workers(schema: str, prefix: str) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    with ExitStack() as stack:
        urls = [stack.enter_context(served(_worker(schema, prefix))) for _ in "ab"]
        clients = [stack.enter_context(httpx.Client(base_url=u, timeout=60)) for u in urls]
        yield clients[0], clients[1]


def test_a_background_run_claimed_from_the_queue_continues_the_trace(
    workers: tuple[httpx.Client, httpx.Client], spans: Spans
) -> None:
    a, b = workers
    thread_id = a.post("/threads", json={}).json()["thread_id"]
    body = {"assistant_id": AGENT, "input": user_input("queued")}
    created = a.post(f"/threads/{thread_id}/runs", json=body, headers={"traceparent": TRACEPARENT})
    assert created.status_code == 200, created.text
    run_id = created.json()["run_id"]
    joined = b.get(f"/threads/{thread_id}/runs/{run_id}/join")
    assert joined.is_success, joined.text
    span = run_span(spans)
    assert span.attributes is not None and span.attributes["tenxgraph.run.id"] == run_id
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and span.parent.is_remote  # claimed: no request around it
    assert f"{span.parent.span_id:016x}" == PARENT_ID
