"""Two processes on one store: CAS races and concurrent first-time migrations."""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import ThreadWrite
from tenxgraph.storage.checkpointer._pg_schema import MIGRATIONS as PG_MIGRATIONS
from tenxgraph.storage.checkpointer._sqlite_schema import MIGRATIONS as SQLITE_MIGRATIONS
from tenxgraph.testing._checkpointer_base import save
from tests.storage import _workers
from tests.storage.conftest import PG_DSN, drop_schema

ROUNDS = 12
spawn = multiprocessing.get_context("spawn")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def spec(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str
) -> AsyncIterator[dict[str, Any]]:
    if request.param == "sqlite":
        yield {"kind": "sqlite", "path": str(tmp_path / "threads.db")}
        return
    yield {"kind": "postgres", "dsn": PG_DSN, "schema": pg_schema}
    await drop_schema(pg_schema)


def run_processes(target: Any, argument_lists: list[tuple[Any, ...]]) -> list[Any]:
    results = spawn.Queue()
    processes = [spawn.Process(target=target, args=(*args, results)) for args in argument_lists]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * len(processes)
    collected = []
    while not results.empty():
        collected.append(results.get())
    return collected


async def test_two_processes_race_on_one_thread(spec: dict[str, Any]) -> None:
    checkpointer = _workers.open_checkpointer(spec)
    key = _workers.RACE_KEY
    first = Message.text_message("start")
    await save(checkpointer, key, ThreadWrite(0, [first], {}, [(0, 1)], node="start", step=0))
    barrier = spawn.Barrier(2)
    outcomes = run_processes(
        _workers.race, [(spec, name, ROUNDS, barrier) for name in ("left", "right")]
    )
    assert len(outcomes) == 2 * ROUNDS
    winners = []
    for round_ in range(ROUNDS):
        this_round = sorted((o for o in outcomes if o[0] == round_), key=lambda o: o[2])
        assert [o[2] for o in this_round] == ["conflict", "won"], this_round
        (_, loser, _, actual), (_, winner, _, version) = this_round
        assert loser != winner
        assert version == actual == round_ + 2  # the loser saw the winner's version
        winners.append(winner)
    stored = await checkpointer.aload(key)
    assert stored is not None
    assert (stored.version, stored.log_length) == (ROUNDS + 1, ROUNDS + 1)
    assert stored.values == {"by": winners[-1]}
    log = [m.message.text() for m in await checkpointer.alist_messages(key)]
    assert log == ["start"] + [f"{winner} {round_}" for round_, winner in enumerate(winners)]
    await checkpointer.aclose()


async def test_two_processes_migrate_a_fresh_store_at_once(spec: dict[str, Any]) -> None:
    barrier = spawn.Barrier(3)
    outcomes = run_processes(
        _workers.start_together, [(spec, name, barrier) for name in ("p1", "p2", "p3")]
    )
    assert sorted(outcomes) == [("p1", 1), ("p2", 1), ("p3", 1)]
    checkpointer = _workers.open_checkpointer(spec)
    for name in ("p1", "p2", "p3"):
        stored = await checkpointer.aload(ThreadKey(name, "alice"))
        assert stored is not None
        assert [m.text() for m in stored.context] == [name]
    await checkpointer.aclose()
    migrations = SQLITE_MIGRATIONS if spec["kind"] == "sqlite" else PG_MIGRATIONS
    assert await applied_versions(spec) == list(range(1, len(migrations) + 1))  # each once


async def applied_versions(spec: dict[str, Any]) -> list[int]:
    if spec["kind"] == "sqlite":
        with sqlite3.connect(spec["path"]) as conn:
            rows = conn.execute(
                "SELECT version FROM schema_versions WHERE component = 'threads' ORDER BY version"
            )
            return [row[0] for row in rows]
    import psycopg

    async with await psycopg.AsyncConnection.connect(PG_DSN) as conn:
        cursor = await conn.execute(
            f'SELECT version FROM "{spec["schema"]}".schema_versions '
            "WHERE component = 'threads' ORDER BY version"
        )
        return [row[0] for row in await cursor.fetchall()]


async def test_a_killed_writer_leaves_whole_steps_only(spec: dict[str, Any]) -> None:
    """SIGKILL in the middle of saving: every committed step is complete, nothing half-written."""
    writer = spawn.Process(target=_workers.write_forever, args=(spec,))
    writer.start()
    checkpointer = _workers.open_checkpointer(spec)
    try:
        for _ in range(600):
            stored = await checkpointer.aload(_workers.CRASH_KEY)
            if stored is not None and stored.version >= 30:
                break
            await asyncio.sleep(0.05)
        writer.kill()
        writer.join(timeout=30)
        assert writer.exitcode == -signal.SIGKILL
        # A statement Postgres received before the kill may still commit: wait until settled.
        stored, previous = None, -1
        while stored is None or stored.version != previous:
            previous = -1 if stored is None else stored.version
            await asyncio.sleep(0.2)
            stored = await checkpointer.aload(_workers.CRASH_KEY)
        assert stored is not None
        version = stored.version
        assert version >= 30
        assert stored.log_length == 2 * version
        assert stored.values == {"step": version - 1}
        assert [m.text() for m in stored.context[-2:]] == [f"q{version - 1}", f"a{version - 1}"]
        log = await checkpointer.alist_messages(_workers.CRASH_KEY)
        assert [m.seq for m in log] == list(range(2 * version))
        checkpoints = await checkpointer.alist_checkpoints(_workers.CRASH_KEY)
        assert [c.version for c in checkpoints] == list(range(version, 0, -1))
        # the thread goes on from the last committed step
        write = ThreadWrite(version, [], {"step": "resumed"}, stored.window, node="r", step=0)
        write.expected_incarnation = stored.incarnation
        stamp = await checkpointer.asave(_workers.CRASH_KEY, write)
        assert stamp == (stored.incarnation, version + 1)
    finally:
        if writer.is_alive():
            writer.kill()
        await checkpointer.aclose()
