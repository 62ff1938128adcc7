"""kill -9 at random moments of model and tool steps: no acknowledged message is lost.

A child process runs turns on one thread (model -> tools -> model), and the
parent kills it 20-300 ms after its first step, again and again; each new
child continues the dead run or sends the next message. Afterwards the
stored log must hold every acknowledged message once, be paired, and give
every tool call exactly one result. A finished tool can run again only when
a kill lands between its return and the commit of its result: those re-runs
are counted and must stay below the number of kills. ``pytest -s`` prints
the figures; ``scripts/integrity_figures.py`` runs more kills.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage import _run_workers
from tests.storage.conftest import PG_DSN, REDIS_URL, drop_redis_keys, drop_schema

pytestmark = pytest.mark.slow

KILLS = 50


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("postgres+redis", marks=[pytest.mark.postgres, pytest.mark.redis]),
    ]
)
async def spec(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[dict[str, Any]]:
    kind = request.param
    if kind == "sqlite":
        yield {"kind": kind, "path": str(tmp_path / "threads.db")}
        return
    yield {
        "kind": kind,
        "dsn": PG_DSN,
        "schema": pg_schema,
        "redis_url": REDIS_URL,
        "prefix": redis_prefix,
    }
    await drop_schema(pg_schema)
    if kind == "postgres+redis":
        await drop_redis_keys(redis_prefix)


def test_kill_9_loses_no_acknowledged_message(spec: dict[str, Any], tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    figures = _run_workers.kill_runs(spec, work, KILLS, seed=KILLS)
    print(f"\n{figures.summary()}")
    assert figures.kills == KILLS
    assert figures.acked > 0
    assert figures.lost == []
    assert figures.duplicate_ids == 0
    assert figures.duplicate_inputs == 0
    assert figures.paired
    assert figures.bad_results == []
    assert figures.rerun_after_saved == []  # a tool runs again only inside the window
    assert figures.finished_reruns <= figures.reruns <= figures.kills
