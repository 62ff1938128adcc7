"""A store's own pooled connections: kept between calls, handed over, given back to the pool.

A busy store takes a connection for every statement. One that did its call
is kept by the store (or handed to a call waiting for one) instead of going
through ``psycopg_pool`` each time; these tests read the pool's own count of
requests to see which path a call took. The freshness check of a kept
connection (a restarted server is caught before a call) is the fault tests'
(``test_faults.py``, ``test_pg_outage.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tenxgraph.errors import StorageUnavailableError
from tenxgraph.storage.sql import PgDatabase, _pg_pool
from tests.storage.conftest import PG_DSN

pytestmark = pytest.mark.postgres


@pytest.fixture
async def database(request: pytest.FixtureRequest) -> AsyncIterator[PgDatabase]:
    size, timeout = getattr(request, "param", (2, 5.0))
    db = PgDatabase(
        PG_DSN, components=[], pool_size=size, connect_timeout=timeout, private_loop=False
    )
    yield db
    await db.aclose()


def pool_requests(db: PgDatabase) -> int:
    """How many connections the store asked its ``psycopg_pool`` pool for."""
    pool = db._pool._pool
    assert pool is not None
    return int(pool.get_stats().get("requests_num", 0))


async def one_statement(db: PgDatabase, sql: str = "SELECT 1") -> None:
    async with db.connection() as conn:
        await conn.execute(sql)


async def test_many_calls_share_two_connections_without_asking_the_pool_again(
    database: PgDatabase,
) -> None:
    await asyncio.gather(*(one_statement(database, "SELECT pg_sleep(0.01)") for _ in range(40)))
    for _ in range(5):
        await one_statement(database)
    assert pool_requests(database) <= 2  # each of the two taken once, then kept or handed over


async def test_a_connection_is_given_back_to_the_pool_after_hold_seconds(
    database: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    await one_statement(database)
    monkeypatch.setattr(_pg_pool, "HOLD_SECONDS", 0.0)
    for _ in range(3):
        await one_statement(database)
    assert pool_requests(database) == 4  # back to the pool after each call: its limits apply


@pytest.mark.parametrize("database", [(1, 5.0)], indirect=True)
async def test_a_connection_left_in_a_transaction_is_not_handed_on_as_it_is(
    database: PgDatabase,
) -> None:
    async with database.connection() as conn:
        await conn.execute("BEGIN")
        await conn.execute("SET LOCAL statement_timeout = 1234")
    async with database.connection() as conn:  # the same (only) connection, rolled back
        cursor = await conn.execute("SHOW statement_timeout")
        assert await cursor.fetchone() != ("1234ms",)
        assert conn.info.transaction_status == 0  # idle, in no transaction


@pytest.mark.parametrize("database", [(1, 0.3)], indirect=True)
async def test_a_call_waiting_for_a_busy_connection_gives_up_after_connect_timeout(
    database: PgDatabase,
) -> None:
    holding = asyncio.Event()

    async def hold() -> None:
        async with database.connection() as conn:
            holding.set()
            await conn.execute("SELECT pg_sleep(0.8)")

    holder = asyncio.create_task(hold())
    await holding.wait()
    with pytest.raises(StorageUnavailableError, match=r"no free connection among 1 within 0\.3s"):
        await one_statement(database)
    await holder
    await one_statement(database)  # the connection came back: nothing was lost waiting
    assert pool_requests(database) == 1
