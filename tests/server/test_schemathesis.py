"""Schemathesis, a fuzzer no one here wrote, against the routes tenxgraph shares with LangGraph.

It reads the server's own ``/openapi.json`` (LangGraph's Agent Protocol
spec is not available offline; ours describes the same routes), keeps the
routes of LangGraph's API (assistants, threads, runs, crons, store; not
tenxgraph's additions) and sends each generated and mutated requests, to a
real server on SQLite with a memory store, generated from the schema and
mutated against it, on a thread that exists half the time. No answer may be a 5xx.
Thread streams that stay open until the client leaves (``GET
/threads/{id}/stream``, ``POST /threads/{id}/stream/events``) are left
out: a request there never ends by itself. A request still unanswered after
10 seconds is a run waiting its ``after_seconds`` or its turn, not a failure.
Bounded by ``TENXGRAPH_SCHEMATHESIS_EXAMPLES`` per route (default 25).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tenxgraph.server import create_app
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.storage.longterm import InMemoryStore
from tenxgraph.testing.server import served
from tests.server.conftest import make_graph

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("TENXGRAPH_SCHEMATHESIS_EXAMPLES", "25"))
THREAD = "schemathesis-thread"
SHARED = r"^/(assistants|threads|runs|store)"
NOT_SHARED = r"/(tools|messages|window|rollback|tool_results)(/|$)|^/threads/\{thread_id\}/stream"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The shared routes of a live server's own OpenAPI description."""
    path = Path(tmp_path_factory.mktemp("schemathesis")) / "threads.sqlite"
    checkpointer = SqliteCheckpointer(str(path))
    app = create_app(make_graph(checkpointer), memory=InMemoryStore())
    app.state.context.on_shutdown.append(checkpointer.aclose)
    with served(app) as url:
        requests.post(f"{url}/threads", json={"thread_id": THREAD}, timeout=10).raise_for_status()
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        yield schema.include(path_regex=SHARED).exclude(path_regex=NOT_SHARED)


def test_no_request_gets_a_server_error(api: Any) -> None:
    """Each operation in turn (schemathesis's pytest plugin predates this pytest)."""
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) > 30, [op.label for op in operations]
    for operation in operations:
        _fuzz(operation)


def _fuzz(operation: Any) -> None:
    strategies = [operation.as_strategy(mode) for mode in GenerationMode]
    if "{thread_id}" in operation.path:  # half the time a thread that exists, to go further
        known = {"thread_id": THREAD}
        strategies += [operation.as_strategy(m, path_parameters=known) for m in GenerationMode]

    @given(case=st.one_of(strategies))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def fuzz(case: Any) -> None:
        try:
            response = case.call(timeout=10)
        except requests.exceptions.Timeout:
            return  # a run waiting (after_seconds, its turn): taken, not failed
        assert response.status_code < 500, f"{operation.label}: {response.text[:500]}"

    fuzz()
