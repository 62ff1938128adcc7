"""SQLite calls run on the event loop's thread when they cannot wait, else in a worker thread.

Another process's (or connection's) write lock sends a write to a worker
thread while the loop keeps running other tasks; failures roll back; a
cancelled call leaves the database usable; the WAL is folded in off the loop.
No timings are asserted: progress and ordering only.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tenxgraph import _sync
from tenxgraph._sync import run_sync
from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import StorageError
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadWrite
from tenxgraph.storage.sql import Component, SqliteDatabase
from tenxgraph.storage.sql._sqlite import transaction

GUARD = 30
"""Seconds after which a lock holder lets go unasked (the loop was stuck: the test fails)."""

NOTES = Component("notes", (("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",),))
KEY = ThreadKey("t", "alice")


def database(path: Path, timeout: float = 4 * GUARD) -> SqliteDatabase:
    """A busy timeout past the guard, so a loop stuck in a busy wait outlasts the holder."""
    return SqliteDatabase(path, components=[NOTES], timeout=timeout)


def add_note(conn: sqlite3.Connection, body: str) -> int:
    """Insert one note in a write transaction; return the thread it ran on."""
    with transaction(conn, "IMMEDIATE"):
        conn.execute("INSERT INTO notes (body) VALUES (?)", (body,))
    return threading.get_ident()


def notes(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT body FROM notes ORDER BY id")]


def where(conn: sqlite3.Connection) -> int:
    return threading.get_ident()


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Another connection, in its own thread, holding SQLite's write lock until exit.

    Exit asks it to let go. Had the event loop been stuck waiting for that
    lock, the test could never get there: the holder then lets go after a
    guard of ``GUARD`` seconds (only so that the test ends), and the test fails.
    """
    locked, release, on_request = threading.Event(), threading.Event(), []

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            locked.set()
            on_request.append(release.wait(GUARD))
            conn.execute("COMMIT")
        finally:
            conn.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(GUARD)
    try:
        yield
    finally:
        release.set()
        holder.join()
    assert on_request == [True], "the event loop was stuck while another connection held the lock"


async def spin(turns: int) -> int:
    """Another task on the loop: it finishes only if the loop keeps running."""
    for _ in range(turns):
        await asyncio.sleep(0)
    return turns


def save(version: int, text: str, incarnation: str | None = None) -> ThreadWrite:
    write = ThreadWrite(
        version, [Message.text_message(text)], {"n": version}, [(0, version + 1)], node="n", step=0
    )
    write.expected_incarnation = incarnation
    return write


async def test_the_first_call_opens_in_a_thread_and_later_ones_run_inline(tmp_path: Path) -> None:
    db = database(tmp_path / "db.sqlite")
    try:
        opened_on = await db.call(where)  # opening and migrating may wait: a worker thread
        assert opened_on != threading.get_ident()
        assert await db.call(add_note, "a") == threading.get_ident()
        assert await db.call(notes) == ["a"]
    finally:
        db.close()


async def test_a_write_meeting_another_process_lock_waits_in_a_thread(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = database(path)
    await db.call(add_note, "before")
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLD_WRITE_LOCK,
        str(path),
        str(GUARD),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert await holder.stdout.readline() == b"locked\n"
        write = asyncio.create_task(db.call(add_note, "while locked"))
        assert await spin(200) == 200  # the loop ran on while the write waited
        assert not write.done()  # it cannot finish while the other process holds the lock
        holder.stdin.write(b"go\n")
        await holder.stdin.drain()
        ran_on = await write
        assert await holder.wait() == 0  # 3: the loop was stuck until the holder gave up
        assert ran_on != threading.get_ident()
        assert await db.call(notes) == ["before", "from the other process", "while locked"]
        assert await db.call(add_note, "after") == threading.get_ident()  # inline again
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
        db.close()


_HOLD_WRITE_LOCK = textwrap.dedent(
    """
    import select, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO notes (body) VALUES ('from the other process')")
    print("locked", flush=True)
    asked = select.select([sys.stdin], [], [], float(sys.argv[2]))[0]  # the guard, as above
    conn.execute("COMMIT")
    sys.exit(0 if asked else 3)
    """
)


async def test_a_save_meeting_a_lock_keeps_the_loop_running(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    checkpointer = SqliteCheckpointer(path, timeout=4 * GUARD)
    try:
        incarnation, _ = await checkpointer.asave(KEY, save(0, "one"))
        with write_locked(path):
            second = asyncio.create_task(checkpointer.asave(KEY, save(1, "two", incarnation)))
            lease = asyncio.create_task(checkpointer.atake_lease(KEY, "me", 60))
            assert await spin(200) == 200
            assert not second.done() and not lease.done()
        assert (await second).version == 2
        assert await lease is None
        stored = await checkpointer.aload(KEY)
        assert stored is not None
        assert [m.text() for m in stored.context] == ["one", "two"]
    finally:
        await checkpointer.aclose()


async def test_a_lock_held_too_long_is_a_storage_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = database(path, timeout=0.2)
    try:
        await db.call(add_note, "a")
        with write_locked(path), pytest.raises(StorageError, match=r"db\.sqlite.*locked"):
            await db.call(add_note, "b")
        assert await db.call(notes) == ["a"]
    finally:
        db.close()


async def test_a_failing_statement_rolls_the_transaction_back(tmp_path: Path) -> None:
    db = database(tmp_path / "db.sqlite")

    def half_then_fail(conn: sqlite3.Connection) -> None:
        with transaction(conn, "IMMEDIATE"):
            conn.execute("INSERT INTO notes (body) VALUES ('half')")
            conn.execute("INSERT INTO no_such_table VALUES (1)")

    def begin_and_raise(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")  # a transaction the function itself leaves open
        conn.execute("INSERT INTO notes (body) VALUES ('half')")
        raise ValueError("not stored")

    try:
        await db.call(add_note, "kept")
        with pytest.raises(StorageError, match=r"db\.sqlite.*no such table") as raised:
            await db.call(half_then_fail)
        assert isinstance(raised.value.__cause__, sqlite3.Error)
        with pytest.raises(ValueError, match="not stored"):
            await db.call(begin_and_raise)
        assert await db.call(lambda conn: conn.in_transaction) is False
        with pytest.raises(ValueError, match="not stored"):  # the same in a worker thread
            await asyncio.to_thread(db.run, begin_and_raise)
        assert await db.call(lambda conn: conn.in_transaction) is False
        assert await db.call(add_note, "next") == threading.get_ident()
        await db.call(add_note, body="by keyword")
        await asyncio.to_thread(db.run, add_note, body="by keyword in a thread")
        assert await db.call(notes) == ["kept", "next", "by keyword", "by keyword in a thread"]
    finally:
        db.close()


async def test_a_cancelled_call_leaves_the_database_usable(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = database(path)
    started = threading.Event()

    def add_in_a_thread(conn: sqlite3.Connection) -> None:
        if threading.get_ident() != loop_thread:
            started.set()  # the worker holds the connection and now waits for the lock
        add_note(conn, "cancelled")

    loop_thread = threading.get_ident()
    try:
        await db.call(add_note, "a")
        with write_locked(path):
            call = asyncio.create_task(db.call(add_in_a_thread))
            assert await asyncio.to_thread(started.wait, 30)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        # The worker was not interrupted: its transaction ends whole (committed here,
        # as the lock went away), and the next call runs after it, with no transaction open.
        assert await db.call(lambda conn: conn.in_transaction) is False
        assert await db.call(notes) == ["a", "cancelled"]
        await db.call(add_note, "b")
        assert await db.call(notes) == ["a", "cancelled", "b"]
    finally:
        db.close()


async def test_the_wal_is_folded_in_off_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = database(path)
    checkpoints: list[int] = []

    def trace(conn: sqlite3.Connection) -> None:
        def statement(sql: str) -> None:
            if "wal_checkpoint" in sql:
                checkpoints.append(threading.get_ident())

        conn.set_trace_callback(statement)

    try:
        await db.call(trace)
        for number in range(3000):
            await db.call(add_note, f"note {number:05} " + "x" * 200)
        assert checkpoints  # the WAL was folded in ...
        assert threading.get_ident() not in checkpoints  # ... never on the loop's thread
        wal_size = await asyncio.to_thread(os.path.getsize, f"{path}-wal")
        assert wal_size <= 1_200_000  # and kept near journal_size_limit (1 MB)
        assert len(await db.call(notes)) == 3000
    finally:
        db.close()


def test_the_loop_and_other_threads_share_one_instance(tmp_path: Path) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "threads.db")
    turns, failed = 40, []

    async def chat(key: ThreadKey) -> None:
        incarnation, version = None, 0
        for turn in range(turns):
            incarnation, version = await checkpointer.asave(
                key, save(version, f"{key.thread_id} {turn}", incarnation)
            )
            await checkpointer.atake_lease(key, "me", 60)
            assert (await checkpointer.aversion(key)) == (incarnation, version)

    def in_os_thread(name: str) -> None:
        try:
            run_sync(chat(ThreadKey(name)))
        except BaseException as exc:
            failed.append(exc)
        finally:
            _sync._loop().close()  # the thread's private loop, left open by run_sync

    async def on_one_loop() -> None:
        await asyncio.gather(*(chat(ThreadKey(f"task-{n}")) for n in range(3)))

    threads = [threading.Thread(target=in_os_thread, args=(f"os-{n}",)) for n in range(3)]
    try:
        for thread in threads:
            thread.start()
        asyncio.run(on_one_loop())
        for thread in threads:
            thread.join()
        assert failed == []
        for name in [f"os-{n}" for n in range(3)] + [f"task-{n}" for n in range(3)]:
            messages = run_sync(checkpointer.alist_messages(ThreadKey(name)))
            assert [m.message.text() for m in messages] == [f"{name} {t}" for t in range(turns)]
    finally:
        run_sync(checkpointer.aclose())
