"""The durable run table on the real Postgres: claims through thread leases, order, fencing, stops.

A running row's only owner is its thread's lease (the checkpointer's lease
rows, in the same schema): these tests hold, renew, release and let expire
those leases through a ``PgCheckpointer`` on the queue's schema.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.runs import PgRunQueue, RunGone
from tenxgraph.runs._pg_queue import RUNS
from tenxgraph.runs._run_mail import MAIL
from tenxgraph.storage.checkpointer import pg_leases
from tenxgraph.storage.checkpointer.postgres import PgCheckpointer
from tenxgraph.storage.sql import Component, PgDatabase

from .conftest import PG_DSN

pytestmark = pytest.mark.postgres

LONG = 30.0


@pytest.fixture
async def tables(schema: str) -> AsyncIterator[tuple[PgRunQueue, PgCheckpointer]]:
    queue = PgRunQueue(PG_DSN, schema=schema, reserve_seconds=0.3)
    leases = PgCheckpointer(PG_DSN, schema=schema, pool_size=2)
    try:
        yield queue, leases
    finally:
        await queue.aclose()
        await leases.aclose()


async def _add(queue: PgRunQueue, run_id: str, thread: str, run_after: float = 0.0) -> None:
    await queue.add(
        run_id=run_id,
        user_id="u",
        thread_id=thread,
        record={"run_id": run_id},
        request={"n": run_id},
        run_after=run_after,
    )


def _key(thread: str) -> ThreadKey:
    return ThreadKey(thread, "u")


async def test_concurrent_claims_take_each_run_once_and_threads_in_order(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    for i in range(6):
        await _add(queue, f"r{i}", f"t{i % 3}")  # threads t0, t1, t2 have two runs each
    await _add(queue, "r9", "t9")
    assert await leases.atake_lease(_key("t9"), "outside/1", LONG) is None  # a run off the queue
    claims = await asyncio.gather(*(queue.claim(LONG) for _ in range(7)))
    taken = {c.run_id: c for c in claims if c is not None}
    assert sorted(taken) == ["r0", "r1", "r2"]  # the first of each free thread; others wait
    assert all(c.attempts == 1 and c.status == "running" for c in taken.values())
    owner = taken["r0"].lease_owner
    assert owner is not None and owner.startswith("r0/")  # the claim took the thread's lease
    assert await leases.atake_lease(_key("t0"), "other/1", LONG) == owner
    assert await queue.finish("r0", 1, "success", {"ok": 1})
    assert await queue.claim(LONG) is None  # r3 waits until r0's lease is let go
    await leases.arelease_lease(_key("t0"), owner)
    nxt = await queue.claim(LONG)
    assert nxt is not None and nxt.run_id == "r3"  # t0's second run, now first of t0
    stats = await queue.stats()
    assert stats.by_status == {"pending": 3, "running": 3, "success": 1}
    assert stats.claimable == 3  # r4, r5 behind their threads' first runs, r9 behind "outside"


async def test_a_batch_claim_takes_the_first_run_of_each_free_thread_oldest_first(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    for i in range(12):
        await _add(queue, f"r{i:02}", f"t{i % 5}")  # t0..t4; t0 and t1 have three runs
    assert await leases.atake_lease(_key("t2"), "outside/1", LONG) is None  # a run off the queue
    first = await queue.claim_many(LONG, 3)
    assert [c.run_id for c in first] == ["r00", "r01", "r03"]  # r02 waits behind "outside"
    rest = await queue.claim_many(LONG, 10)
    assert [c.run_id for c in rest] == ["r04"]  # each thread's later runs wait for the first
    for claim in first + rest:
        assert claim.status == "running" and claim.attempts == 1 and claim.base_version is None
        assert claim.lease_owner is not None and claim.lease_owner.startswith(claim.run_id + "/")
        other = await leases.atake_lease(claim.key, "other/1", LONG)
        assert other == claim.lease_owner  # each claim holds its own thread's lease
    assert await queue.claim_many(LONG, 10) == []


async def test_concurrent_batch_claims_split_the_runs(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, _ = tables
    for i in range(40):
        await _add(queue, f"r{i:02}", f"t{i}")
    batches = await asyncio.gather(*(queue.claim_many(LONG, 8) for _ in range(6)))
    taken = [c.run_id for batch in batches for c in batch]
    assert sorted(taken) == [f"r{i:02}" for i in range(40)]  # each run once, none left
    rows = {c.run_id: c for batch in batches for c in batch}
    assert all(row.attempts == 1 for row in rows.values())


async def test_a_batch_claim_picks_again_for_a_thread_taken_between_its_pick_and_its_lease(
    tables: tuple[PgRunQueue, PgCheckpointer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent claimer may take a picked row's thread first (a statement's snapshot can
    predate that claimer's commit): the batch is filled from the rows after it, not left short."""
    queue, leases = tables
    for i in range(4):
        await _add(queue, f"r{i}", f"t{i}")
    take_many = pg_leases.take_many
    calls: list[list[str]] = []

    async def outrun_once(conn: Any, s: str, wanted: list[Any], seconds: float) -> Any:
        calls.append([key.thread_id for key, _ in wanted])
        if len(calls) == 1:  # another worker takes the oldest picked thread first
            assert await leases.atake_lease(wanted[0][0], "rival/1", LONG) is None
        return await take_many(conn, s, wanted, seconds)

    monkeypatch.setattr(pg_leases, "take_many", outrun_once)
    claims = await queue.claim_many(LONG, 3)
    assert [c.run_id for c in claims] == ["r1", "r2", "r3"]
    assert calls == [["t0", "t1", "t2"], ["t3"]]  # a second pick, for the one place lost
    assert await leases.atake_lease(_key("t0"), "other/1", LONG) == "rival/1"
    assert (await queue.stats()).by_status == {"pending": 1, "running": 3}


async def test_a_killed_workers_run_is_claimed_again_once_its_lease_expired(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, _ = tables
    await _add(queue, "r1", "t1")
    first = await queue.claim(0.3)  # its worker then dies: nobody renews the lease
    assert first is not None and first.base_version is None
    assert await queue.claim(0.3) is None  # alive while its lease is
    await asyncio.sleep(0.5)
    second = await queue.claim(LONG)
    assert second is not None and second.run_id == "r1" and second.status == "running"
    assert second.attempts == 2 and second.base_version == 0  # set by the first attempt
    assert second.lease_owner != first.lease_owner
    assert not await queue.finish("r1", 1, "error", None)  # the dead attempt is fenced
    assert await queue.finish("r1", 2, "success", {"x": 1})
    assert not await queue.finish("r1", 2, "success", {"x": 1})  # ended: nothing more written
    row = await queue.get("u", "r1")
    assert row is not None and row.status == "success" and row.output == {"x": 1}
    assert await queue.get("other-user", "r1") is None


async def test_a_run_handed_back_is_claimed_at_once(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    await _add(queue, "r1", "t1")
    claimed = await queue.claim(LONG)
    assert claimed is not None and claimed.lease_owner is not None
    assert not await queue.alive("r2") and await queue.alive("r1")
    await leases.arelease_lease(_key("t1"), claimed.lease_owner)  # graceful shutdown
    assert not await queue.alive("r1")
    again = await queue.claim(LONG)
    assert again is not None and again.run_id == "r1" and again.attempts == 2


async def test_a_running_run_held_by_another_worker_is_stopped_through_its_lease(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    await _add(queue, "held", "t1")
    await _add(queue, "queued", "t2")
    claimed = await queue.claim(LONG)
    assert claimed is not None and claimed.run_id == "held" and claimed.lease_owner is not None
    after = await queue.request_stop("held", "interrupt")
    assert after is not None and after.status == "running"  # its holder stops it
    assert await leases.arenew_lease(_key("t1"), claimed.lease_owner, LONG) == "interrupt"
    ended = await queue.request_stop("queued", "rollback")
    assert ended is not None and ended.status == "interrupted"  # nobody ran it: ended now
    assert await queue.request_stop("queued", "interrupt") is None  # ended already
    assert await queue.claim(LONG) is None


async def test_a_running_run_whose_lease_is_gone_or_another_runs_ends_when_stopped(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    await _add(queue, "r1", "t1")
    claimed = await queue.claim(0.2)
    assert claimed is not None
    await asyncio.sleep(0.4)  # its worker died
    assert await leases.atake_lease(_key("t1"), "later/1", LONG) is None  # another run took t1
    after = await queue.request_stop("r1", "interrupt")
    assert after is not None and after.status == "interrupted"
    assert await leases.arenew_lease(_key("t1"), "later/1", LONG) is None  # not stopped


async def test_a_run_started_where_it_was_asked_takes_its_thread_in_order(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    await _add(queue, "a", "t1", run_after=LONG)  # reserved for the worker it was asked of
    await _add(queue, "b", "t1", run_after=LONG)
    assert await queue.claim(LONG) is None
    holder, stamp, attempts = await queue.take("b", _key("t1"), "b/1", LONG)
    assert (holder, stamp, attempts) == ("a", None, 0)  # an earlier run of the thread first
    holder, stamp, attempts = await queue.take("a", _key("t1"), "a/1", LONG)
    assert holder is None and stamp is None and attempts == 1  # no thread saved yet
    assert await queue.alive("a")
    assert await queue.finish("a", 1, "success", None)
    assert (await queue.take("b", _key("t1"), "b/1", LONG))[0] == "a/1"  # a's lease not let go
    await leases.arelease_lease(_key("t1"), "a/1")
    assert (await queue.take("b", _key("t1"), "b/1", LONG))[:1] == (None,)
    with pytest.raises(RunGone):  # running now: a second start is refused
        await queue.take("b", _key("t1"), "b/2", LONG)


async def test_a_reserved_row_is_claimed_once_its_worker_stopped_trying(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, leases = tables
    await _add(queue, "r1", "t1", run_after=0.2)
    assert await leases.atake_lease(_key("t1"), "busy/1", LONG) is None
    assert (await queue.take("r1", _key("t1"), "r1/1", LONG))[0] == "busy/1"  # reserve 0.3 s
    await leases.arelease_lease(_key("t1"), "busy/1")
    assert await queue.claim(LONG) is None  # still reserved for the worker waiting for it
    await asyncio.sleep(0.5)  # that worker died while it waited
    claimed = await queue.claim(LONG)
    assert claimed is not None and claimed.run_id == "r1"


async def test_newer_run_displaces_the_pending_runs_before_it_and_stop_ends_the_queued(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, _ = tables
    for run_id in ("r1", "r2", "r3"):
        await _add(queue, run_id, "t1")
    await _add(queue, "r4", "t1")
    assert await queue.displace("u", "t1", "r3") == ["r1", "r2"]
    assert await queue.active("u", "t1") == ["r3", "r4"]
    with pytest.raises(RunGone, match="interrupted"):
        await queue.take("r1", _key("t1"), "r1/1", LONG)


async def test_adding_twice_keeps_one_row_and_only_ended_rows_are_deleted(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    queue, _ = tables
    await _add(queue, "r1", "t1")
    await queue.add(
        run_id="r1", user_id="u", thread_id="t1", record={"second": True}, request={}
    )  # a lost reply's resend: nothing more
    row = await queue.get("u", "r1")
    assert row is not None and row.record == {"run_id": "r1"}
    await queue.forget("r1")
    assert await queue.get("u", "r1") is not None  # pending: kept
    await queue.request_stop("r1", "interrupt")
    await queue.forget("r1")
    assert await queue.get("u", "r1") is None


async def test_the_migration_keeps_existing_rows_and_drops_the_owner_columns(schema: str) -> None:
    old = PgDatabase(
        PG_DSN,
        components=[Component(c.name, c.migrations[:1]) for c in (RUNS, MAIL)],
        schema=schema,
        private_loop=False,
    )
    async with old.connection() as conn:
        await conn.execute(
            f'INSERT INTO "{schema}".server_runs (run_id, user_id, thread_id, status, record,'
            " request, owner, lease_until, cancel) VALUES ('r1', 'u', 't1', 'running', '{}',"
            " '{}', 'gone-worker', now(), 'interrupt')"
        )
    await old.aclose()
    queue = PgRunQueue(PG_DSN, schema=schema)
    try:
        row = await queue.get("u", "r1")
        assert row is not None and row.status == "running"
        claimed = await queue.claim(LONG)  # no lease on its thread: its worker is gone
        assert claimed is not None and claimed.run_id == "r1"
        columns = await _columns(queue, schema)
        assert "run_after" in columns and not {"owner", "lease_until", "cancel"} & columns
    finally:
        await queue.aclose()


async def _columns(queue: Any, schema: str) -> set[str]:
    rows = await queue._fetch(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = 'server_runs'",
        [schema],
    )
    return {str(name) for (name,) in rows}


async def test_one_beat_renews_a_workers_leases_and_brings_stops_and_losses(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    from tenxgraph.runs._lease_beat import LeaseBeat
    from tenxgraph.runs._leases import ThreadLease

    queue, leases = tables
    for run_id, thread in (("a", "t1"), ("b", "t2"), ("c", "t3")):
        await _add(queue, run_id, thread)
    claims = [await queue.claim(0.6) for _ in range(3)]
    owners = {c.run_id: c.lease_owner for c in claims if c is not None}
    assert set(owners) == {"a", "b", "c"}
    answers = await queue.renew_leases([(_key("t1"), owners["a"]), (_key("t9"), "x/1")], 0.6)
    assert answers == {owners["a"]: None}  # a lease that is not held is left out: lost
    await queue.request_stop("b", "interrupt")
    await leases.arelease_lease(_key("t3"), owners["c"])  # as if another worker took it
    beat, heard = LeaseBeat(queue, 0.6), []
    for run_id, thread in (("a", "t1"), ("b", "t2"), ("c", "t3")):
        lease = ThreadLease(leases, _key(thread), owners[run_id], 0.6)
        lease.on_stop = lambda request, run_id=run_id: heard.append((run_id, request))
        beat.add(lease)
    try:
        await asyncio.sleep(1.0)  # past the 0.6 s leases: renewed every 0.2 s meanwhile
        assert await queue.alive("a") and await queue.alive("b") and not await queue.alive("c")
        assert ("b", "interrupt") in heard and heard.count(("c", "lost")) == 1
        assert not any(run_id == "a" for run_id, _ in heard)
    finally:
        await beat.aclose()


async def test_a_claim_brings_the_threads_stamp_and_the_run_starts_from_it(
    tables: tuple[PgRunQueue, PgCheckpointer],
) -> None:
    from tenxgraph.core.state.message import Message
    from tenxgraph.errors import ThreadBusyError
    from tenxgraph.runs._leases import LeasePolicy, take_thread
    from tenxgraph.storage.checkpointer import ThreadWrite

    queue, leases = tables
    write = ThreadWrite(0, [Message.text_message("hi")], {}, [(0, 1)], node="n", step=0)
    saved = await leases.asave(_key("old"), write)
    await _add(queue, "new-run", "new")
    await _add(queue, "old-run", "old")
    claims = {c.run_id: c for c in await queue.claim_many(LONG, 5)}
    assert claims["new-run"].stamp is None  # no thread yet
    assert claims["old-run"].stamp == saved == await leases.aversion(_key("old"))
    rows = {run_id: await queue.get("u", run_id) for run_id in claims}
    assert {run_id: row and row.base_version for run_id, row in rows.items()} == {
        "new-run": 0,  # marked running all the same, with no thread row to join
        "old-run": saved.version,
    }
    claim, policy = claims["old-run"], LeasePolicy(LONG)
    assert claim.lease_owner is not None
    await leases.arelease_lease(claim.key, claim.lease_owner)  # the run would find it lost...
    run_lease = await take_thread(
        leases, claim.key, "old-run", policy, owner=claim.lease_owner, stamp=claim.stamp
    )
    assert (run_lease.kept, run_lease.stamp) == (True, saved)  # ...but asks nothing: handed
    with pytest.raises(ThreadBusyError):  # without the stamp it asks the lease table
        await take_thread(leases, claim.key, "old-run", policy, owner=claim.lease_owner)
