"""Leases on Postgres: what only the Postgres backend does (the contract is in tenxgraph.testing).

A take and a save fenced by the lease lock the same lease row, so each waits
for the other (``tenxgraph.testing.thread_leases`` holds the lease tests
every backend passes).
"""

from __future__ import annotations

import asyncio

import pytest

from tenxgraph.errors import ThreadBusyError
from tenxgraph.testing._thread_leases import EXPIRED, KEY, LONG, SHORT, turn
from tests.storage.conftest import PG_DSN, drop_schema


@pytest.mark.postgres
async def test_postgres_a_take_and_a_fenced_save_in_flight_wait_for_each_other(
    pg_schema: str,
) -> None:
    """Once a take returns, the displaced run's saves fail, even one sent before the take ended.

    A take not yet committed makes a fenced save wait and then refuse it; a
    fenced save in flight (its lease row locked) makes a take wait for it.
    """
    import psycopg

    from tenxgraph.storage.checkpointer import PgCheckpointer

    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)
    other = await psycopg.AsyncConnection.connect(PG_DSN)
    leases = f'"{pg_schema}".leases'
    try:
        assert await checkpointer.atake_lease(KEY, "run-a", SHORT) is None
        stamp = await checkpointer.asave(KEY, turn(None, "a1", 0, "run-a"))
        await other.execute(f"UPDATE {leases} SET owner = 'run-b'")  # run-b's take, open
        save = asyncio.create_task(checkpointer.asave(KEY, turn(stamp, "a2", 1, "run-a")))
        await asyncio.sleep(EXPIRED)
        assert not save.done()
        await other.commit()
        with pytest.raises(ThreadBusyError):
            await save
        await other.execute(f"UPDATE {leases} SET owner = 'run-a', expires_at = 0")
        await other.commit()
        await other.execute(f"SELECT FROM {leases} FOR SHARE")  # run-a's fenced save, open
        take = asyncio.create_task(checkpointer.atake_lease(KEY, "run-c", LONG))
        await asyncio.sleep(EXPIRED)
        assert not take.done()
        await other.commit()
        assert await take is None
        stored = await checkpointer.aload(KEY)
        assert stored is not None and [m.text() for m in stored.context] == ["a1"]
    finally:
        await other.close()
        await checkpointer.aclose()
        await drop_schema(pg_schema)
