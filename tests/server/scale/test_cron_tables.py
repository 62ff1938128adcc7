"""Cron tables on a clock the test gives: each tick starts one run, on memory and on Postgres.

On Postgres a tick's run is a pending row of the run table, queued in the
transaction that moves the cron on, so schedulers on several workers queue
it once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tenxgraph.errors import StateError
from tenxgraph.runs import (
    Cron,
    CronQuery,
    CronScheduler,
    DueRun,
    MemoryCronTable,
    PgCronTable,
    PgRunQueue,
    check_schedule,
)

from .conftest import PG_DSN

T0 = dt.datetime(2026, 1, 1, 0, 0, 30, tzinfo=dt.UTC)


def _cron(cron_id: str = "c1", thread_id: str | None = None, **more: Any) -> Cron:
    run = {"kwargs": {"input": {"messages": []}}, "metadata": {"m": 1}}
    cron = Cron(cron_id, "u", "agent", thread_id, "*/5 * * * *", {"assistant_id": "agent"}, run)
    for name, value in more.items():
        setattr(cron, name, value)
    return cron.scheduled(T0)


def test_schedules_are_checked_before_anything_is_stored() -> None:
    check_schedule("*/5 * * * *", "Europe/Paris")
    for schedule, zone in (("bad", None), ("0 0 30 2 *", None), ("* * * * *", "Mars/Base")):
        with pytest.raises(StateError):
            check_schedule(schedule, zone)


async def _run_ticks(table: Any) -> list[DueRun]:
    fired: list[DueRun] = []

    async def fire(run: DueRun) -> None:
        fired.append(run)

    await table.create(_cron(thread_id="t1"))
    await table.create(_cron("c2", end_time=T0 + dt.timedelta(minutes=7)))
    scheduler = CronScheduler(table, fire)
    assert await scheduler.tick(T0) == []  # the first tick is at 00:05
    at_five = T0.replace(minute=5, second=0)
    first = await scheduler.tick(at_five)
    assert sorted(run.cron_id for run in first) == ["c1", "c2"]
    assert await scheduler.tick(at_five) == []  # claimed: a tick starts one run
    late = await scheduler.tick(T0 + dt.timedelta(hours=1))  # missed ticks: one run
    assert [run.cron_id for run in late] == ["c1"]  # c2 ended at 00:07
    runs = first + late
    by_cron = {run.cron_id: run for run in first}
    assert by_cron["c1"].thread_id == "t1" and not by_cron["c1"].request["delete_thread"]
    assert by_cron["c2"].request["delete_thread"] and by_cron["c2"].thread_id != "t1"
    assert by_cron["c1"].record["metadata"] == {"m": 1, "cron_id": "c1"}
    assert (await table.get("u", "c2")).next_run_at is None
    assert (await table.get("u", "c1")).next_run_at > T0 + dt.timedelta(hours=1)
    assert await table.count(CronQuery("u", thread_id="t1")) == 1
    found = await table.search(
        CronQuery("u"), limit=10, offset=0, sort_by="cron_id", descending=True
    )
    assert [c.cron_id for c in found] == ["c2", "c1"]
    assert await table.get("someone else", "c1") is None
    assert await table.delete("u", "c1") and not await table.delete("u", "c1")
    return runs if not table.enqueues else fired


async def test_memory_table_fires_each_tick_once() -> None:
    fired = await _run_ticks(MemoryCronTable())
    assert len(fired) == 3


@pytest.fixture
async def queue(schema: str) -> AsyncIterator[PgRunQueue]:
    queue = PgRunQueue(PG_DSN, schema=schema)
    try:
        yield queue
    finally:
        await queue.aclose()


@pytest.mark.postgres
async def test_pg_table_queues_each_tick_once_as_a_pending_run(queue: PgRunQueue) -> None:
    runs = await _run_ticks(PgCronTable(queue))
    assert runs == []  # the table queued them: nothing for the scheduler to fire
    stats = await queue.stats()
    assert stats.by_status == {"pending": 3}
    rows = await queue.list_runs("u", "t1", limit=10, offset=0, status=None)
    assert len(rows) == 2  # c1's two ticks, on its thread
    assert rows[0].request == {"kwargs": {"input": {"messages": []}}, "delete_thread": False}


@pytest.mark.postgres
async def test_pg_schedulers_on_several_workers_queue_a_tick_once(
    queue: PgRunQueue, schema: str
) -> None:
    others = [PgRunQueue(PG_DSN, schema=schema) for _ in range(3)]
    try:
        tables = [PgCronTable(q) for q in [queue, *others]]
        for n in range(20):
            await tables[0].create(_cron(f"c{n}"))
        at_five = T0.replace(minute=5, second=0)
        ticks = await asyncio.gather(*(table.due(at_five) for table in tables))
        queued = sorted(run.cron_id for runs in ticks for run in runs)
        assert queued == sorted(f"c{n}" for n in range(20))
        assert (await queue.stats()).by_status == {"pending": 20}
    finally:
        for other in others:
            await other.aclose()
