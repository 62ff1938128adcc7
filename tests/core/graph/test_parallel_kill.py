"""kill -9 in the middle of a parallel step: a fresh process re-runs only the unfinished tasks.

The child kills itself right after the save that holds the third of six
finished tasks (see ``_parallel_kill_worker``); a fresh process continues the
run. Every task that had finished must not start again: its write was saved
as it finished.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph._command import PARALLEL
from tests.core.graph import _parallel_kill_worker as worker
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
        app = worker.digest_graph(checkpointer, work, hang=False)
        return await app.aget_state(worker.CONFIG)
    finally:
        await checkpointer.aclose()


async def test_a_kill_mid_step_re_runs_no_finished_task(
    spec: dict[str, Any], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    starts = work / "starts.log"

    assert await run_child(worker.summarize_then_die, spec, work) == -signal.SIGKILL
    killed = await _stored(spec, work)
    meta = killed.execution_meta
    assert (meta.status, meta.next_node) == ("running", PARALLEL)
    finished = {meta.tasks[int(index)]["arg"]["doc"] for index in meta.task_writes}
    assert finished == set(range(worker.FAST))
    assert killed.summaries == []  # the step had not merged
    first = Counter(map(int, starts.read_text().split()))
    assert first == Counter(range(worker.DOCUMENTS))  # all six had started

    assert await run_child(worker.resume, spec, work) == 0
    again = Counter(map(int, starts.read_text().split())) - first
    assert again == Counter(range(worker.FAST, worker.DOCUMENTS))  # 0 finished tasks re-run
    state = await _stored(spec, work)
    assert state.execution_meta.status == "completed"
    assert state.summaries == [f"summary {n}" for n in range(worker.DOCUMENTS)]
    assert state.execution_meta.task_writes == {} and state.execution_meta.tasks == []
