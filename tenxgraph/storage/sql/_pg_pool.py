"""Postgres connections for every store: a checked pool, outage handling, an I/O loop.

``PgConnections`` hands out pooled connections with bounded waits.
With an owned pool, a connection that did its call goes back to the
store's own list (``_Held``: the last returned is the next taken) or
straight to a call waiting for one, and only goes back to the
``psycopg_pool`` pool after ``HOLD_SECONDS`` out of it (so the pool's
lifetime and idle limits still apply) or when it is not idle. A busy worker
takes connections hundreds of times a second, with every connection in use
at once: the pool's own take and return (a lock, and a waiting client with
a timer task whenever none is free) cost such a worker a tenth of its CPU.
Every connection is checked before it is used, wherever it came from: one
that was returned within ``FRESH_SECONDS`` and has nothing to read (a
server that closed it, restarting or shutting down, leaves an end of file
or an error message to read) is used as it is; any other gets an empty
round trip (``AsyncConnectionPool.check_connection``). When a check fails,
a direct connection attempt (the *probe*, bounded by ``connect_timeout``)
tells the two cases apart:

- the server answers: it was restarted and the pooled connections are dead.
  The pool is replaced by a fresh one and the call goes on, unnoticed.
- it does not: an outage. One warning is logged, the pool is closed (so its
  background reconnection attempts do not fill the log) and the call raises
  ``StorageUnavailableError``. Later calls probe first and fail as fast as
  the server refuses (at most ``connect_timeout``); the first probe that
  succeeds logs one info line and opens a new pool.

The first use probes too, so a wrong DSN fails in one line, never reaching
the pool. A caller's own pool is used as given: no probe, no replacement,
only the same error mapping.

Outages are classified here, in one place (``is_outage``): a server that
refuses or does not answer (``PostgresUnreachable``: nothing of the call
reached it) and a connection that broke under a call, by a reset or an
administrator's shutdown (``ConnectionLost``: what it sent may have been
applied). A busy pool while the server answers, a constraint violation or a
conflict is never an outage. ``PgConnections.retrying`` runs a call again,
with backoff, while an outage is younger than the store's bound (see
``retrying`` for the decisions).

``IoLoop`` is a private event loop in a daemon thread. A store that owns
all its connections runs its database work there, whatever loop or thread
calls it (see ``_postgres.py`` for why). Loops still running at
interpreter exit are closed by an ``atexit`` hook, so a forgotten
``close()`` prints nothing.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import logging
import math
import select
import threading
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

from tenxgraph._sync import waits_in_sync_call
from tenxgraph.errors import StorageError, StorageUnavailableError, UsageError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "ConnectionLost",
    "IoLoop",
    "PgConnections",
    "PostgresUnreachable",
    "is_outage",
    "on_io_loop",
]

logger = logging.getLogger("tenxgraph.storage.checkpointer.postgres")
"""The name users configure (documented in docs/persistence-and-threads.md); kept as it was."""

T = TypeVar("T")
P = ParamSpec("P")


class _Runner(Protocol):
    async def _run(self, coroutine: Coroutine[Any, Any, T]) -> T: ...


S = TypeVar("S", bound=_Runner)

_FIRST_RETRY, _LAST_RETRY = 0.05, 1.0
"""Seconds between attempts of a call during an outage: doubling from the first to the last."""

FRESH_SECONDS = 1.0
"""A connection back in the pool for less than this, with nothing to read, is used unchecked."""

HOLD_SECONDS = 30.0
"""How long a store keeps a connection out of its pool before handing it back there."""

_SHUTDOWN_STATES = frozenset({"57P01", "57P02", "57P03"})
"""admin_shutdown, crash_shutdown, cannot_connect_now: the server is going or not back yet."""


class PostgresUnreachable(StorageUnavailableError):
    """The server refused or did not answer a connection: nothing of the call reached it."""


class ConnectionLost(StorageUnavailableError):
    """A connection broke during a call: what it sent may or may not have been applied."""


def is_outage(error: BaseException) -> bool:
    """True for the failures an outage causes, which a call may retry.

    Never a busy pool while the server answers, a constraint violation, a
    conflict or any other error the server returned on a live connection.
    """
    return isinstance(error, (PostgresUnreachable, ConnectionLost))


def _broke(conn: AsyncConnection[Any], error: Exception) -> bool:
    """True when ``error`` ended ``conn`` (reset, shutdown), not when the server refused a query."""
    state = getattr(error, "sqlstate", None) or ""
    return conn.broken or state in _SHUTDOWN_STATES or state.startswith("08")


def on_io_loop(
    method: Callable[Concatenate[S, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """Run a public method through its object's ``_run`` (on the loop its connections use)."""

    async def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(method(self, *args, **kwargs))

    functools.update_wrapper(run, method)
    return run


class PgConnections:
    """Checked pooled connections to one server; outages raise ``StorageUnavailableError``."""

    def __init__(
        self,
        source: str | AsyncConnectionPool,
        *,
        connect_timeout: float,
        min_size: int,
        max_size: int,
    ) -> None:
        """Own a pool made from the DSN ``source``, or use the caller's pool ``source``."""
        self.connect_timeout = connect_timeout
        self._min_size = min_size
        self._max_size = max_size
        self._conninfo = source if isinstance(source, str) else None
        self._pool: AsyncConnectionPool | None = None if isinstance(source, str) else source
        self._down: str | None = None
        """Why the server was found unreachable, while it still is."""
        self._down_since: float | None = None
        """When (``time.monotonic``) the current outage was first seen; None while up."""
        self._reached = False
        """True once a connection worked: only then is a failure an outage, not a wrong DSN."""
        self._returned: weakref.WeakKeyDictionary[AsyncConnection[Any], float] = (
            weakref.WeakKeyDictionary()
        )
        """When each connection that worked went back to the pool (``time.monotonic``)."""
        self._held: _Held | None = None
        """The owned pool's connections this store took out of it."""
        conninfo = source if isinstance(source, str) else source.conninfo
        self.where = _describe(conninfo) if isinstance(conninfo, str) else "(the given pool)"

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A checked connection; afterwards kept for the next call or returned to its pool."""
        import psycopg

        pool, conn = await self._acquire()
        self._reached = True
        try:
            if conn.autocommit:  # nothing to end: a transaction block ends its own
                yield conn
            else:
                async with conn:  # commits or rolls back a caller's non-autocommit connection
                    yield conn
            self._down_since = None  # a call went through: any outage is over
            self._returned[conn] = time.monotonic()
        except psycopg.Error as exc:
            if not _broke(conn, exc):
                raise
            if self._down_since is None:
                self._down_since = time.monotonic()
            await self._discard(pool)  # its other connections are suspect too; the next
            raise ConnectionLost(  # call probes and starts a fresh pool
                f"postgres at {self.where}: the connection broke: {_one_line(exc)}"
            ) from exc
        finally:
            await self._give_back(pool, conn)

    async def retrying(
        self, attempt: Callable[[bool], Awaitable[T]], outage_timeout: float, *, resend: bool
    ) -> T:
        """``attempt(lost)`` until it is not stopped by an outage, or the outage is too old.

        ``lost`` is True once an attempt's connection broke after it sent
        something: ``attempt`` then finds out what was applied (a save checks
        whether its write landed). With ``resend=False`` such a call is not
        run again (its outcome is unknown and it cannot tell).

        Decisions. The bound is the outage's age, not the call's: a call made
        when the server has been unreachable for ``outage_timeout`` fails
        after one probe, so a run that gives up does not wait the bound again
        for each of its last writes. A server never reached (a wrong DSN, a
        server not started) fails at once: that is a configuration error.
        Each attempt is itself bounded (``connect_timeout`` per connection),
        so a call waits at most ``outage_timeout`` plus one attempt, counted
        from its first failure even when other calls get through meanwhile.
        """
        lost, delay, first = False, _FIRST_RETRY, None
        while True:
            try:
                return await attempt(lost)
            except StorageUnavailableError as exc:
                if not (is_outage(exc) and self._reached and outage_timeout > 0):
                    raise
                if isinstance(exc, ConnectionLost) and not resend:
                    raise
                now = time.monotonic()
                if self._down_since is None:  # an outage no probe saw yet starts now
                    self._down_since = now
                first = now if first is None else first  # the server may answer others
                since = min(self._down_since, first)  # meanwhile: the call's own bound
                left = since + outage_timeout - now
                if left <= 0:
                    raise PostgresUnreachable(
                        f"postgres at {self.where} unreachable for {now - since:.1f}s "
                        f"(outage_timeout {outage_timeout:g}s): {self._down or _one_line(exc)}"
                    ) from exc
                lost = lost or isinstance(exc, ConnectionLost)
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, _LAST_RETRY)

    async def _acquire(self) -> tuple[AsyncConnectionPool, AsyncConnection[Any]]:
        from psycopg_pool import PoolTimeout

        if self._conninfo is None:
            return await self._acquire_given()
        if self._down is not None:
            await self.probe()  # raises while the outage lasts
        for _ in range(3):
            pool = await self._owned_pool()
            assert self._held is not None
            try:
                conn = await self._take(self._held)
            except (PoolTimeout, TimeoutError) as exc:
                await self.probe()  # an outage explains the wait...
                raise StorageUnavailableError(  # ...otherwise every connection stayed busy
                    f"postgres at {self.where}: no free connection among {self._max_size} "
                    f"within {self.connect_timeout:g}s (raise pool_size?)"
                ) from exc
            if conn is None:
                continue  # the pool was replaced while this call waited
            if await self._works(conn):
                return pool, conn
            await self._discard(pool)
            await pool.putconn(conn)
            await self.probe()  # the server answers: it restarted; go on with a new pool
        raise PostgresUnreachable(f"postgres at {self.where}: new connections fail their check")

    async def _take(self, held: _Held) -> AsyncConnection[Any] | None:
        """The last connection returned, one a call hands over as it ends, or the pool's.

        None: the pool was replaced while waiting. Raises ``PoolTimeout`` or
        ``TimeoutError`` after ``connect_timeout``.
        """
        if held.idle and time.monotonic() - held.taken[held.idle[0]] > HOLD_SECONDS:
            held.out -= 1  # the oldest idle one goes back: the pool's limits apply to it
            await held.pool.putconn(held.idle.pop(0))
        if held.idle:
            return held.idle.pop()
        if held.out < self._max_size:
            held.out += 1
            try:
                conn = await held.pool.getconn(timeout=self.connect_timeout)
            except BaseException:
                held.out -= 1
                raise
            held.taken[conn] = time.monotonic()
            return conn
        waiter: asyncio.Future[AsyncConnection[Any] | None] = (
            asyncio.get_running_loop().create_future()
        )
        held.waiting.append(waiter)
        try:
            async with asyncio.timeout(self.connect_timeout):
                return await waiter
        except BaseException:
            handed = waiter.result() if waiter.done() and not waiter.cancelled() else None
            if handed is not None:  # handed over as this call gave up
                await self._give_back(held.pool, handed)
            raise

    async def _give_back(self, pool: AsyncConnectionPool, conn: AsyncConnection[Any]) -> None:
        """Hand ``conn`` to a waiting call, or keep it idle; the pool gets it when not reusable.

        Not reusable: not idle (a call left it in a transaction, broken, closed),
        out of the pool for ``HOLD_SECONDS``, or from a pool replaced since.
        """
        from psycopg.pq import TransactionStatus

        held = self._held
        if held is None or held.pool is not pool:
            await pool.putconn(conn)
            return
        if (
            conn.info.transaction_status == TransactionStatus.IDLE
            and time.monotonic() - held.taken[conn] < HOLD_SECONDS
        ):
            if not held.hand_over(conn):
                held.idle.append(conn)
            return
        held.out -= 1
        await pool.putconn(conn)
        held.hand_over(None)  # a waiting call may take one from the pool now

    async def _acquire_given(self) -> tuple[AsyncConnectionPool, AsyncConnection[Any]]:
        from psycopg_pool import PoolTimeout

        assert self._pool is not None
        try:
            return self._pool, await self._pool.getconn()
        except PoolTimeout as exc:
            raise StorageUnavailableError(  # busy or down: a given pool cannot tell
                f"postgres at {self.where}: no connection from the pool: {_one_line(exc)}"
            ) from exc

    async def _works(self, conn: AsyncConnection[Any]) -> bool:
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        returned = self._returned.get(conn)
        if returned is not None and time.monotonic() - returned < FRESH_SECONDS and _quiet(conn):
            return True
        try:
            async with asyncio.timeout(self.connect_timeout):
                await AsyncConnectionPool.check_connection(conn)
        except (psycopg.Error, OSError, TimeoutError):
            await conn.close()
            return False
        return True

    async def _owned_pool(self) -> AsyncConnectionPool:
        """The pool, made (after a successful probe) when there is none."""
        from psycopg_pool import AsyncConnectionPool

        if self._pool is None:
            await self.probe()
            if self._pool is None:  # another task may have made one during the probe
                self._pool = AsyncConnectionPool(
                    self._conninfo or "",
                    min_size=self._min_size,
                    max_size=self._max_size,
                    open=False,
                    timeout=self.connect_timeout,
                    kwargs={"autocommit": True, "connect_timeout": _libpq_timeout(self)},
                    name=f"tenxgraph {self.where}",
                )
                await self._pool.open(wait=False)
                self._held = _Held(self._pool)
        return self._pool

    async def _discard(self, pool: AsyncConnectionPool) -> None:
        """Close an owned pool (quietly: no reconnection attempts); the next call makes one."""
        if self._conninfo is not None and self._pool is pool:
            self._pool, held, self._held = None, self._held, None
            if held is not None:
                while held.hand_over(None):  # waiting calls take from the next pool
                    pass
                for conn in held.idle:
                    await conn.close()
            await pool.close()

    async def probe(self) -> None:
        """Connect directly once; raise ``StorageUnavailableError`` (logged once) if that fails."""
        import psycopg

        try:
            async with asyncio.timeout(self.connect_timeout):
                conn = await psycopg.AsyncConnection.connect(
                    self._conninfo or "", connect_timeout=_libpq_timeout(self)
                )
            await conn.close()
        except (psycopg.Error, OSError, TimeoutError) as exc:
            reason = _one_line(exc) or f"no answer within {self.connect_timeout:g}s"
            if self._down is None:
                logger.warning(
                    "postgres at %s is unavailable, calls fail until it is back: %s",
                    self.where,
                    reason,
                )
                if self._pool is not None:
                    await self._discard(self._pool)
            self._down = reason
            if self._down_since is None:
                self._down_since = time.monotonic()
            message = f"postgres at {self.where} is unavailable: {reason}"
            raise PostgresUnreachable(message) from exc
        self._reached = True
        self._down_since = None
        if self._down is not None:
            self._down = None
            logger.info("postgres at %s is available again", self.where)

    async def aclose(self) -> None:
        """Close the pool if it is owned (a later call opens a new one)."""
        if self._conninfo is not None and self._pool is not None:
            await self._discard(self._pool)


class _Held:
    """The connections of one owned pool that a store took out of it, idle or in use."""

    __slots__ = ("idle", "out", "pool", "taken", "waiting")

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool
        self.out = 0
        """Connections taken from the pool and not put back (in use or idle): at most its size."""
        self.idle: list[AsyncConnection[Any]] = []
        """Connections no call uses, the last returned last (the next one taken)."""
        self.waiting: deque[asyncio.Future[AsyncConnection[Any] | None]] = deque()
        """Calls waiting for a connection while every one the pool may open is out, oldest first."""
        self.taken: weakref.WeakKeyDictionary[AsyncConnection[Any], float] = (
            weakref.WeakKeyDictionary()
        )
        """When each connection came out of the pool (``time.monotonic``)."""

    def hand_over(self, conn: AsyncConnection[Any] | None) -> bool:
        """Give ``conn`` to the oldest call still waiting (None: take one again); False: none."""
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False


def _quiet(conn: AsyncConnection[Any]) -> bool:
    """True when an idle connection's socket has nothing to read (the server did not close it)."""
    if conn.closed or conn.broken:
        return False
    poll = select.poll()
    poll.register(conn.fileno(), select.POLLIN)
    return not poll.poll(0)


def _libpq_timeout(connections: PgConnections) -> int:
    """Libpq's ``connect_timeout`` (whole seconds, at least 2; asyncio bounds the rest)."""
    return max(2, math.ceil(connections.connect_timeout))


def _one_line(error: BaseException) -> str:
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


def _describe(conninfo: str) -> str:
    """``host:port/dbname`` of a DSN, without credentials."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(conninfo)
    except Exception:  # a malformed DSN is reported by the probe
        return "(unparsable DSN)"
    host = params.get("host") or params.get("hostaddr") or "localhost"
    return f"{host}:{params.get('port') or 5432}/{params.get('dbname') or params.get('user') or ''}"


class IoLoop:
    """A private event loop in a daemon thread, started on first use, that runs coroutines.

    Or a loop lent to it (``lend``): a server that runs every run on its own
    loop lends that loop, and its calls then run where they are made, with
    no hop to another thread and back (two wake-ups, and two threads
    taking turns at the GIL, for every statement); a caller on any other
    loop or thread still hops, to the lent loop.
    """

    def __init__(self, name: str, cleanup: Callable[[], Awaitable[None]]) -> None:
        """``cleanup`` runs on the loop before it stops (closing what lives there)."""
        self._name = name
        self._cleanup = cleanup
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lent = False
        """True while ``_loop`` is a caller's (``lend``), not one of a thread of its own."""

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
                _running.add(self)
            return self._loop

    async def lend(self) -> None:
        """Run on the calling loop from now on (until ``aclose``), instead of a thread's.

        What lived on the private loop, if it started, is closed there first
        (``cleanup``): connections belong to the loop they were made on.
        """
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        await self.aclose()
        with self._lock:
            self._loop, self._lent = loop, True

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the I/O loop and await its result from the calling loop."""
        loop = self._started()
        if self._lent:
            if loop is asyncio.get_running_loop():
                return await coroutine
            if not loop.is_running():  # nothing would ever run it
                coroutine.close()
                raise StorageError(
                    f"{self._name}: the event loop lent to it has stopped; close the store "
                    "on that loop before it stops"
                )
            if waits_in_sync_call(loop):  # its thread waits for this call: it would never run
                coroutine.close()
                raise UsageError(
                    f"{self._name} runs on the server's event loop, and a sync call made on "
                    "that loop's thread blocks it: call the async method (aget_state, "
                    "ainvoke...) from async code there"
                )
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        return await asyncio.wrap_future(future)

    async def aclose(self) -> None:
        """Run the cleanup there, then stop the loop and its thread (a later ``run`` restarts)."""
        if self._loop is not None:
            await self.run(_call(self._cleanup))
            self._stop()

    def close_now(self, timeout: float = 5.0) -> None:
        """Blocking close, for ``atexit``: cleanup bounded by ``timeout``, then stop."""
        loop = self._loop
        if loop is None or self._lent:  # a lent loop's owner closes what runs on it
            return
        try:
            asyncio.run_coroutine_threadsafe(_call(self._cleanup), loop).result(timeout)
        except Exception as exc:  # exiting anyway; say why the cleanup was cut short
            logger.warning("closing %s at exit: %r", self._name, exc)
        self._stop()

    def _stop(self) -> None:
        with self._lock:
            loop, thread, lent = self._loop, self._thread, self._lent
            self._loop = self._thread = None
            self._lent = False
            _running.discard(self)
        if loop is None or thread is None or lent:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


async def _call(function: Callable[[], Awaitable[None]]) -> None:
    await function()


_running: weakref.WeakSet[IoLoop] = weakref.WeakSet()


@atexit.register
def _close_running() -> None:
    for io_loop in list(_running):
        io_loop.close_now()
