"""``PgDatabase``: one Postgres schema (psycopg 3, async pool), its migrations and its I/O loop.

Tables live in their own schema (``tenxgraph`` by default). On first use the
schema and ``schema_versions`` are created under the advisory transaction
lock of the schema, then each component's missing migrations are applied
under the lock of schema and component, so processes starting together
apply each one exactly once (see ``_migrations``).

Where the work runs (decision). An asyncio connection pool belongs to one
event loop, and sync callers each bring their own: every OS thread calling
``invoke`` runs a private loop. One pool per loop was rejected: a
thread-per-request server (Flask, Django) makes a new thread, hence a new
loop, per request, so per-loop pools would multiply connections without
bound, and a pool whose thread has gone cannot be closed from another one.
Instead, a store that owns its connections (a DSN, and Redis from a URL)
runs its database work on one private I/O loop in a daemon thread, and every
caller, on any loop or thread, awaits the result there: one pool of
``pool_size`` connections per store, and ``close()`` works from anywhere.
The price is a thread hop per call, as SQLite pays for
``asyncio.to_thread``; a server whose runs all go on one loop lends it that
loop instead (``use_running_loop``, ``IoLoop.lend``): no hop from there,
and other callers hop to it. A pool (or Redis client) the caller passes in belongs
to the caller's loop, so such a store runs on the loop that first uses it
and refuses others.

Faults: see ``_pg_pool`` (checked connections, one
``StorageUnavailableError`` within ``connect_timeout`` while the server is
down, recovery without user action). ``retrying`` runs a call again through
an outage shorter than ``outage_timeout``; a store applies it to the calls
a run depends on.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph.errors import ConfigError, MissingExtraError, StorageError
from tenxgraph.storage.sql._migrations import (
    Component,
    Steps,
    migrate,
    postgres_dialect,
    prepare,
)
from tenxgraph.storage.sql._pg_pool import IoLoop, PgConnections

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PgDatabase"]

R = TypeVar("R")

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


class PgDatabase:
    """One Postgres schema: checked pooled connections, transactions, the components' migrations."""

    def __init__(
        self,
        conninfo: str | AsyncConnectionPool,
        *,
        components: Sequence[Component],
        schema: str = "tenxgraph",
        connect_timeout: float = 5.0,
        outage_timeout: float = 30.0,
        pool_min_size: int = 1,
        pool_size: int = 10,
        private_loop: bool = True,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Connect with a DSN (an owned pool) or an ``AsyncConnectionPool`` (the caller's).

        ``connect_timeout`` (seconds) bounds each wait for a connection, new
        or pooled. ``outage_timeout`` (seconds, 0: never) is how long an
        outage may last while ``retrying`` calls wait it out.
        ``private_loop``: with a DSN, run the work on a private I/O loop
        (False when the store also uses a client bound to the caller's
        loop). ``on_close`` closes what else the store owns, on the loop the
        work runs on.
        """
        try:
            from psycopg_pool import AsyncConnectionPool
        except ImportError:
            raise MissingExtraError("psycopg", "postgres") from None
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ConfigError(
                f"schema must be a plain identifier (letters, digits, _), got {schema!r}"
            )
        if not connect_timeout > 0:
            raise ConfigError(f"connect_timeout must be > 0 seconds, got {connect_timeout}")
        if not outage_timeout >= 0:
            raise ConfigError(f"outage_timeout must be >= 0 seconds, got {outage_timeout}")
        if not 0 <= pool_min_size <= pool_size or pool_size < 1:
            raise ConfigError(
                f"need 0 <= pool_min_size <= pool_size and pool_size >= 1, "
                f"got {pool_min_size} and {pool_size}"
            )
        if not isinstance(conninfo, (str, AsyncConnectionPool)):
            raise ConfigError(f"conninfo must be a DSN or an AsyncConnectionPool, got {conninfo!r}")
        self.schema = schema
        self.s = f'"{schema}"'
        """The quoted schema name, to put before table names."""
        self.components = tuple(components)
        self.connect_timeout = connect_timeout
        """Seconds each wait for a connection may take before ``StorageUnavailableError``."""
        self.outage_timeout = outage_timeout
        """Seconds an outage may last while ``retrying`` calls wait for the server."""
        self._pool = PgConnections(
            conninfo, connect_timeout=connect_timeout, min_size=pool_min_size, max_size=pool_size
        )
        self._on_close = on_close
        owned = isinstance(conninfo, str) and private_loop
        self._io = IoLoop("tenxgraph-postgres", self._close_connections) if owned else None
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Await ``coroutine`` on the I/O loop, or on the one caller loop it is bound to."""
        if self._io is not None:
            return await self._io.run(coroutine)
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            coroutine.close()
            raise StorageError(
                "this store uses a connection pool or Redis client you passed in, which "
                "belongs to the event loop that first used it; use it from that loop only (or "
                "pass a DSN and a redis:// URL, which work from any loop and thread)"
            )
        return await coroutine

    async def use_running_loop(self) -> None:
        """Do the work on the calling loop from now on, not a private one (``IoLoop.lend``)."""
        if self._io is not None:
            await self._io.lend()

    async def retrying(self, attempt: Callable[[bool], Awaitable[R]], *, resend: bool = True) -> R:
        """``attempt(lost)``, again with backoff while an outage is younger than ``outage_timeout``.

        ``lost``: an earlier attempt's connection broke after sending (see
        ``PgConnections.retrying``); ``resend=False`` gives up then instead.
        """
        return await self._pool.retrying(attempt, self.outage_timeout, resend=resend)

    @asynccontextmanager
    async def connection(
        self, *, transaction: bool = False, snapshot: bool = False
    ) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection, in a transaction if asked (``snapshot``: repeatable read).

        Migrates on first use. Driver errors surface as ``StorageError``; the
        original is the cause.
        """
        import psycopg

        try:
            if not self._ready:
                async with self._ready_lock:
                    if not self._ready:
                        await self._migrate()
                        self._ready = True
            async with self._pool.connection() as conn:
                if not (transaction or snapshot):
                    yield conn
                    return
                async with conn.transaction():
                    if snapshot:
                        await conn.execute(
                            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
                        )
                    yield conn
        except psycopg.Error as exc:
            raise StorageError(f"postgres ({self.schema}): {exc}") from exc

    async def _migrate(self) -> None:
        """Prepare the schema, then each component, each in a transaction under its lock."""
        dialect = postgres_dialect(self.schema)
        async with self._pool.connection() as conn:
            async with conn.transaction():
                await _lock(conn, f"tenxgraph:{self.schema}")
                await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.s}")
                await run_async(conn, prepare(dialect, self.components))
            for component in self.components:
                async with conn.transaction():
                    await _lock(conn, f"tenxgraph:{self.schema}:{component.name}")
                    await run_async(conn, migrate(dialect, component))

    async def aclose(self) -> None:
        """Close the pool (and ``on_close``'s) if owned; a later call reopens."""
        if self._io is not None:
            await self._io.aclose()
        else:
            await self._close_connections()

    async def _close_connections(self) -> None:
        self._ready_lock = asyncio.Lock()  # the next use may be on a new I/O loop
        await self._pool.aclose()
        if self._on_close is not None:
            await self._on_close()


async def _lock(conn: AsyncConnection[Any], name: str) -> None:
    """Take the advisory lock ``name`` until the transaction ends."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (name,))


async def run_async(conn: AsyncConnection[Any], steps: Steps) -> None:
    """Drive a migration runner on ``conn``."""
    try:
        query = next(steps)
        while True:
            sql, params = query
            cursor = await conn.execute(sql, params or None)
            rows = await cursor.fetchall() if cursor.description is not None else []
            query = steps.send(rows)
    except StopIteration:
        return
