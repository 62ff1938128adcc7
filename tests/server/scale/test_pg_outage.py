"""Runs of a server on Postgres while its (private) Postgres stops for a few seconds (issue 31).

The run queue waits out an outage shorter than ``outage_timeout`` as the
checkpointer does: runs in flight when the server stopped, and runs created
while it was down, all end ``success`` with their whole turn stored, none
``error``. The shared server on 5432 is never touched.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.testing.server import served
from tests.storage.servers import PrivatePostgres

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

AGENT = "agent"
STEPS = 6
OUTAGE = 3.0


def _app(dsn: str, schema: str) -> Any:
    from tenxgraph.server._scale_out import install
    from tenxgraph.server.app import create_app
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

    graph = StateGraph(AgentState)
    names = [f"s{i}" for i in range(STEPS)]
    for name in names:
        graph.add_node(name, _step(name))
    graph.set_entry_point(names[0])
    for first, second in itertools.pairwise(names):
        graph.add_edge(first, second)
    checkpointer = PgCheckpointer(dsn, schema=schema, pool_size=4, connect_timeout=2.0)
    compiled = graph.compile(checkpointer, busy_timeout=60, lease_seconds=20.0)
    app = create_app(compiled, graph_id=AGENT)
    app.state.context.on_shutdown.append(checkpointer.aclose)
    install(app.state.context, dsn, None, schema=schema, lease_seconds=20.0, poll_seconds=0.1)
    return app


def _step(name: str) -> Any:
    async def node(state: AgentState) -> Message:
        await asyncio.sleep(0.2)
        return Message.text_message(f"{name} after {state.context[-1].text()}", role="assistant")

    return node


def _body(text: str) -> dict[str, Any]:
    message = {"role": "user", "content": text}
    return {"assistant_id": AGENT, "input": {"messages": [message]}, "if_not_exists": "create"}


async def _past_first_step(client: httpx.AsyncClient, thread: str) -> None:
    for _ in range(1200):
        state = (await client.get(f"/threads/{thread}/state")).json()
        if len(state.get("values", {}).get("messages", [])) > 1:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"thread {thread} never got past its first step")


async def _final(client: httpx.AsyncClient, thread: str, run_id: str) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        answer = await client.get(f"/threads/{thread}/runs/{run_id}")
        if answer.status_code == 200 and answer.json()["status"] not in ("pending", "running"):
            return str(answer.json()["status"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never ended")


async def test_runs_in_flight_and_created_during_a_short_outage_end_success(
    private_postgres: PrivatePostgres,
) -> None:
    schema = f"tg_outage_{uuid.uuid4().hex[:8]}"
    try:
        with served(_app(private_postgres.dsn, schema)) as url:
            async with httpx.AsyncClient(base_url=url, timeout=120) as client:
                flying = []
                for n in range(3):
                    run = await client.post(f"/threads/f{n}/runs", json=_body(f"f{n}"))
                    assert run.status_code == 200, run.text
                    flying.append((f"f{n}", run.json()["run_id"]))
                for thread, _ in flying:  # each is past its first step
                    await _past_first_step(client, thread)
                await asyncio.to_thread(private_postgres.stop)
                created = [
                    asyncio.ensure_future(client.post(f"/threads/n{n}/runs", json=_body(f"n{n}")))
                    for n in range(2)
                ]
                await asyncio.sleep(OUTAGE)
                await asyncio.to_thread(private_postgres.start)
                for n, answer in enumerate(await asyncio.gather(*created)):
                    assert answer.status_code == 200, answer.text
                    flying.append((f"n{n}", answer.json()["run_id"]))
                statuses = [await _final(client, thread, run_id) for thread, run_id in flying]
                assert statuses == ["success"] * 5
                for thread, _ in flying:
                    state = (await client.get(f"/threads/{thread}/state")).json()
                    texts = [m["content"] for m in state["values"]["messages"]]
                    assert len(texts) == STEPS + 1 and texts[-1].startswith(f"s{STEPS - 1} after")
    finally:
        if not private_postgres.running:
            private_postgres.start()
        import psycopg

        async with await psycopg.AsyncConnection.connect(
            private_postgres.dsn, autocommit=True
        ) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
