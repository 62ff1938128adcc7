"""The durable run table on the real Postgres: claims, leases, per-thread order, fencing, cancel."""

from __future__ import annotations

import asyncio

import pytest

from tenxgraph.server._pg_queue import PgRunQueue

from .conftest import PG_DSN

pytestmark = pytest.mark.postgres


async def _add(queue: PgRunQueue, run_id: str, thread: str, owner: str | None = None) -> None:
    await queue.add(
        run_id=run_id,
        user_id="u",
        thread_id=thread,
        record={"run_id": run_id},
        request={"n": run_id},
        owner=owner,
    )


async def test_concurrent_claims_take_each_run_once_and_threads_in_order(schema: str) -> None:
    queue = PgRunQueue(PG_DSN, schema=schema, lease_seconds=30)
    try:
        for i in range(6):
            await _add(queue, f"r{i}", f"t{i % 3}")  # threads t0, t1, t2 have two runs each
        claims = await asyncio.gather(*(queue.claim(f"w{i}") for i in range(6)))
        taken = sorted(c.run_id for c in claims if c is not None)
        assert taken == ["r0", "r1", "r2"]  # the first of each thread; the others wait behind
        assert all(c.attempts == 1 for c in claims if c is not None)
        owner = {c.run_id: f"w{i}" for i, c in enumerate(claims) if c is not None}
        assert await queue.finish("r0", owner["r0"], "success", {"ok": 1})
        nxt = await queue.claim("w9")
        assert nxt is not None and nxt.run_id == "r3"  # t0's second run, now first of t0
        assert await queue.claim("w9") is None
        stats = await queue.stats()
        assert stats.by_status == {"pending": 5, "success": 1}
        assert stats.claimable == 2  # r4 and r5: unheld, behind their threads' first runs
    finally:
        await queue.aclose()


async def test_an_expired_lease_is_claimed_again_and_the_old_holder_is_fenced(schema: str) -> None:
    queue = PgRunQueue(PG_DSN, schema=schema, lease_seconds=0.3)
    try:
        await _add(queue, "r1", "t1", owner="dead")
        assert await queue.claim("w2") is None  # held by a live lease
        await queue.started("r1", "dead", 4)
        await asyncio.sleep(0.5)
        claimed = await queue.claim("w2")
        assert claimed is not None and claimed.status == "running"
        assert claimed.attempts == 1 and claimed.base_version == 4
        assert await queue.heartbeat("dead", ["r1"]) == {}  # the dead holder lost it
        assert not await queue.finish("r1", "dead", "error", None)
        await queue.started("r1", "w2", 9)  # a second start keeps the first version
        assert await queue.heartbeat("w2", ["r1"]) == {"r1": None}
        assert await queue.finish("r1", "w2", "success", {"x": 1})
        row = await queue.get("u", "r1")
        assert row is not None and row.status == "success" and row.output == {"x": 1}
        assert row.base_version == 4
        assert await queue.get("other-user", "r1") is None
    finally:
        await queue.aclose()


async def test_cancel_reaches_the_holder_and_ends_an_unheld_run_at_once(schema: str) -> None:
    queue = PgRunQueue(PG_DSN, schema=schema, lease_seconds=30)
    try:
        await _add(queue, "held", "t1", owner="w1")
        await _add(queue, "free", "t2")
        after = await queue.request_cancel("held", "interrupt")
        assert after is not None and after.status == "pending"  # the holder ends it
        assert await queue.heartbeat("w1", ["held"]) == {"held": "interrupt"}
        after = await queue.request_cancel("free", "rollback")
        assert after is not None and after.status == "interrupted"
        assert await queue.claim("w2") is None
        assert await queue.release("w1", ["held"]) == 1  # handed back: claimable at once
        claimed = await queue.claim("w2")
        assert claimed is not None and claimed.run_id == "held" and claimed.cancel == "interrupt"
    finally:
        await queue.aclose()
