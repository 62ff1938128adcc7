"""``SqliteDatabase``: one SQLite file in WAL mode, one connection per instance behind a lock.

The connection is opened on first use, switched to WAL, and brought up to
date: every component's migrations run in one ``BEGIN IMMEDIATE``
transaction, so two processes opening a fresh file take turns.

Async callers run their blocking work through ``call(function, *args)``,
which calls ``function(conn, *args)`` holding the connection. Handing each
call to a worker thread cost about as much as the statements themselves
(W2: half of a durable turn), so ``call`` runs the function on the caller's
thread when doing so cannot wait: the instance lock is free right now, and
the connection's busy timeout is zero there, so a write that would wait for
another process's write lock fails at once with ``SQLITE_BUSY`` instead.
That failure changed nothing (an open transaction is rolled back), and the
call is handed to a worker thread that waits up to ``timeout`` seconds as
before. Work that may run long -- opening and migrating the file, folding
the WAL into it -- always runs in a worker thread, so the event loop is never
held by a wait or an fsync; callers send work of unbounded size (reading a
whole thread) to a thread themselves, through ``run``.

Durability does not depend on where a call runs: the same statements run
on the same connection. ``synchronous=NORMAL`` (the usual WAL setting): a
committed transaction survives a killed process; after a power cut the last
few commits may be lost. Commits write to the WAL without an fsync; the WAL
is folded into the file (one fsync of each) after about every 256 pages
written through the instance, in a worker thread, and truncated to 1 MB, so
the files stay small while open. sqlite3 errors surface as ``StorageError``
naming the file; the original is the cause.
"""

from __future__ import annotations

import asyncio

# The first call opens the file in a worker thread: the module of asyncio's default executor,
# which asyncio imports on first use, is imported with this one instead of in that call.
import concurrent.futures.thread  # noqa: F401
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from tenxgraph.errors import StorageError
from tenxgraph.storage.sql._migrations import Component, Steps, migrate, prepare, sqlite_dialect

__all__ = ["SqliteDatabase", "transaction"]

R = TypeVar("R")
P = ParamSpec("P")

logger = logging.getLogger("tenxgraph.storage")

CHECKPOINT_PAGES = 256
"""Fold the WAL into the file after about this many pages written through the instance."""

_MAX_CHANGES = 65_536
"""Upper bound of the rows changed between two checkpoints, whatever the pages per row."""


class SqliteDatabase:
    """One SQLite file: a locked connection, transactions, and the components' migrations."""

    def __init__(
        self, path: str | os.PathLike[str], *, components: Sequence[Component], timeout: float
    ) -> None:
        """Use (and create on first use) the file at ``path``, with a ``timeout`` s busy wait."""
        self.path = os.fspath(path)
        self.components = tuple(components)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._waiters = 0
        """Threads blocked on ``_lock``: inline attempts step aside so they are not starved."""
        self._waiters_lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._changes_left = 0
        """Rows the instance may change before the next call runs in a thread and checkpoints."""
        self._changes_since = 0
        """Rows changed through the instance since the last checkpoint (to estimate pages/row)."""
        self._wal_frames = (0, 0)
        """The WAL's frames and those folded into the file, as the last checkpoint left them."""

    async def call(
        self,
        function: Callable[Concatenate[sqlite3.Connection, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """``function(conn, *args)`` holding the connection; inline when nothing has to wait.

        ``function`` must write only inside one transaction (``transaction``),
        in one autocommit statement, or not at all, so that an inline attempt
        stopped by ``SQLITE_BUSY`` changed nothing and can run again in a
        worker thread. It runs on the
        caller's thread when the instance lock is free, the connection is
        open and no checkpoint is due; else, or if it met a lock, in a
        worker thread that waits for locks up to ``timeout`` seconds.
        """
        if not self._waiters and self._lock.acquire(blocking=False):
            try:
                if self._conn is not None and self._changes_left > 0:
                    return self._run(self._conn, function, args, kwargs)
            except StorageError as exc:
                if not _is_busy(exc.__cause__):
                    raise
                # it met another connection's lock: nothing was written; wait in a thread
            finally:
                self._lock.release()
        return await asyncio.to_thread(self._run_waiting, function, args, kwargs)

    def run(
        self,
        function: Callable[Concatenate[sqlite3.Connection, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """``function(conn, *args)``, waiting for the lock: for a worker thread or sync code.

        Async code calls it through ``asyncio.to_thread`` for work that may
        take long, with the slow part (decoding rows) after it, off the lock.
        """
        return self._run_waiting(function, args, kwargs)

    def _run_waiting(
        self, function: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> R:
        """Wait for the lock and run; then fold the WAL in, still holding the lock, if it is due."""
        with self.connection() as conn:
            result = self._run(conn, function, args, kwargs)
            if self._changes_left <= 0:
                self._checkpoint(conn)
            return result

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """The instance's connection, held exclusively (blocking); opened and migrated on first use.

        Locks are waited for up to ``timeout`` seconds while it is held.
        """
        self._acquire()
        try:
            if self._conn is None:
                self._conn = self._open()
            conn = self._conn
            conn.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
            try:
                yield conn
            finally:
                _end_transaction(conn)
                conn.execute("PRAGMA busy_timeout=0")
        except sqlite3.Error as exc:
            raise StorageError(f"sqlite ({self.path}): {exc}") from exc
        finally:
            self._lock.release()

    @contextmanager
    def transaction(
        self, mode: Literal["DEFERRED", "IMMEDIATE"] = "DEFERRED"
    ) -> Iterator[sqlite3.Connection]:
        """The connection inside one transaction (``IMMEDIATE``: the write lock from the start)."""
        with self.connection() as conn, transaction(conn, mode):
            yield conn

    def close(self) -> None:
        """Close the connection (after the call in progress); a later call opens it again."""
        self._acquire()
        try:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        finally:
            self._lock.release()

    def _acquire(self) -> None:
        """Take the instance lock, waiting; while waiting, inline attempts leave it to us.

        A lock is not fair: a loop calling back to back could otherwise take
        it again each time before the woken thread does.
        """
        if self._lock.acquire(blocking=False):
            return
        with self._waiters_lock:
            self._waiters += 1
        try:
            self._lock.acquire()
        finally:
            with self._waiters_lock:
                self._waiters -= 1

    def _run(
        self,
        conn: sqlite3.Connection,
        function: Callable[..., R],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> R:
        """``function(conn, *args, **kwargs)`` with the lock held, rolled back if it fails.

        Any transaction the function left open when it raised is rolled back
        here, so a function may write ``BEGIN`` ... ``COMMIT`` without a handler.

        sqlite3 errors become ``StorageError`` with the original as the cause
        (``SQLITE_BUSY`` there: nothing was written, as the rollback undid it).
        """
        before = conn.total_changes
        try:
            result = function(conn, *args, **kwargs)
        except sqlite3.Error as exc:
            _end_transaction(conn)
            raise StorageError(f"sqlite ({self.path}): {exc}") from exc
        except BaseException:
            _end_transaction(conn)
            raise
        changed = conn.total_changes - before
        self._changes_left -= changed
        self._changes_since += changed
        return result

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Fold the WAL into the file without waiting for anyone (``PASSIVE``).

        The pages the WAL gained since the last checkpoint, over the rows
        changed meanwhile, set how many rows may change before the next one.
        After a complete checkpoint the WAL starts over (when no reader holds
        it), so its length is all new pages; if a reader kept it, the
        estimate runs high and the next checkpoint merely comes early. A
        failure is logged, not raised: the caller's work is committed.
        """
        try:
            _, frames, folded = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            logger.warning("sqlite (%s): checkpoint failed: %s", self.path, exc)
            self._changes_left, self._changes_since = CHECKPOINT_PAGES, 0
            return
        previous, self._wal_frames = self._wal_frames, (frames, folded)
        pages = frames
        if previous[0] != previous[1] and frames > previous[0]:
            pages = frames - previous[0]  # the WAL could not start over: only the tail is new
        per_row = max(pages, 1) / max(self._changes_since, 1)
        self._changes_left = min(_MAX_CHANGES, max(1, int(CHECKPOINT_PAGES / per_row)))
        self._changes_since = 0

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            _enable_wal(conn, self.timeout)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")  # folded in a worker thread instead
            conn.execute("PRAGMA journal_size_limit=1048576")
            dialect = sqlite_dialect(f"sqlite ({self.path})")
            with transaction(conn, "IMMEDIATE"):
                run_sync(conn, prepare(dialect, self.components))
                for component in self.components:
                    run_sync(conn, migrate(dialect, component))
        except BaseException:
            conn.close()
            raise
        self._changes_left, self._changes_since, self._wal_frames = CHECKPOINT_PAGES, 0, (0, 0)
        return conn


def _is_busy(exc: BaseException | None) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY


def _end_transaction(conn: sqlite3.Connection) -> None:
    """Roll back a transaction a failed or interrupted call left open."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL, retrying while another process does the same.

    On a fresh file SQLite can answer a concurrent journal-mode change with
    "database is locked" at once, without waiting for the busy timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextmanager
def transaction(conn: sqlite3.Connection, mode: str) -> Iterator[None]:
    """``BEGIN mode`` ... ``COMMIT``, rolled back on any exception."""
    conn.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def run_sync(conn: sqlite3.Connection, steps: Steps) -> None:
    """Drive a migration runner on ``conn``."""
    try:
        query = next(steps)
        while True:
            query = steps.send(conn.execute(*query).fetchall())
    except StopIteration:
        return
