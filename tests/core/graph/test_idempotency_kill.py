"""A tool re-run after its process was killed gets the idempotency key of its first run.

A kill between a tool's return and the save of its result runs the tool
again when the run is continued (``max_starts`` bounds how often). The child
kills itself with SIGKILL at exactly that point (see ``_idempotency_worker``);
a fresh process continues the run, and the tool must see the same key.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.core.graph import _idempotency_worker as worker
from tests.storage.conftest import process_spec, run_child


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def spec(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[dict[str, Any]]:
    async with process_spec(request.param, tmp_path, pg_schema, redis_prefix) as spec:
        yield spec


async def _stored(spec: dict[str, Any], work: Path) -> Any:
    checkpointer = worker.open_checkpointer(spec)
    try:
        app = worker.charge_graph(checkpointer, work, threading.Event())
        return await app.aget_state(worker.CONFIG)
    finally:
        await checkpointer.aclose()


async def test_a_tool_run_again_after_a_kill_gets_the_same_key(
    spec: dict[str, Any], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    keys = work / "keys.log"

    assert await run_child(worker.charge_then_die, spec, work) == -signal.SIGKILL
    [first] = keys.read_text().splitlines()
    killed = await _stored(spec, work)
    meta = killed.execution_meta
    assert (meta.status, meta.tool_ledger, meta.tool_starts) == ("running", {}, {worker.CALL_ID: 1})

    assert await run_child(worker.resume, spec, work) == 0
    assert keys.read_text().splitlines() == [first, first]
    state = await _stored(spec, work)
    assert state.execution_meta.status == "completed"
    assert [m.text() for m in state.context][-2:] == ["charged 100", "paid"]
