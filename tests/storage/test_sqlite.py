"""SQLite specifics: one WAL file shared by instances, sync callers, errors mapped."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tenxgraph._sync import run_sync
from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError, StorageError
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadStamp, ThreadWrite

KEY = ThreadKey("t", "alice")


def first_write() -> ThreadWrite:
    return ThreadWrite(0, [Message.text_message("hi")], {"n": 1}, [(0, 1)], node="n", step=0)


async def test_one_wal_file_shared_by_instances(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    writer, reader = SqliteCheckpointer(path), SqliteCheckpointer(str(path))
    try:
        await writer.asave(KEY, first_write())
        stored = await reader.aload(KEY)
        assert stored is not None
        assert [m.text() for m in stored.context] == ["hi"]
    finally:
        await writer.aclose()
        await reader.aclose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"threads", "messages", "checkpoints", "schema_versions"} <= tables


def test_usable_from_sync_code(tmp_path: Path) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "threads.db")
    assert run_sync(checkpointer.asave(KEY, first_write())).version == 1
    stored = run_sync(checkpointer.aload(KEY))
    assert stored is not None
    assert stored.values == {"n": 1}
    run_sync(checkpointer.aclose())
    assert run_sync(checkpointer.aload(KEY)) is not None  # reopens after close
    run_sync(checkpointer.aclose())


async def test_driver_errors_become_storage_errors(tmp_path: Path) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "missing-dir" / "threads.db")
    with pytest.raises(StorageError, match="unable to open database") as raised:
        await checkpointer.aload(KEY)
    assert isinstance(raised.value.__cause__, sqlite3.Error)


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL)")
        conn.execute("INSERT INTO schema_version VALUES (99, 0)")
    checkpointer = SqliteCheckpointer(path)
    with pytest.raises(StorageError, match="schema version 99"):
        await checkpointer.aload(KEY)


def next_write(stamp: ThreadStamp, text: str, log_length: int) -> ThreadWrite:
    return ThreadWrite(
        stamp.version,
        [Message.text_message(text)],
        {"n": log_length + 1},
        [(0, log_length + 1)],
        node="n",
        step=log_length,
        expected_incarnation=stamp.incarnation,
    )


async def test_an_instance_saving_again_sees_what_others_wrote_since(tmp_path: Path) -> None:
    """Its next save of a thread updates the row by the id it remembers, still as a CAS."""
    path = tmp_path / "threads.db"
    here, elsewhere = SqliteCheckpointer(path), SqliteCheckpointer(path)
    try:
        first = await here.asave(KEY, first_write())
        second = await here.asave(KEY, next_write(first, "two", 1))
        third = await elsewhere.asave(KEY, next_write(second, "three", 2))
        with pytest.raises(ConflictError) as raised:  # here is one save behind
            await here.asave(KEY, next_write(second, "stale", 2))
        assert (raised.value.expected, raised.value.actual) == (2, 3)
        fourth = await here.asave(KEY, next_write(third, "four", 3))
        rewound = await elsewhere.arewind(KEY, fourth, 2)
        assert rewound is not None
        with pytest.raises(ConflictError):  # made from the state before the rewind
            await here.asave(KEY, next_write(fourth, "after the rewind", 4))
        await here.asave(KEY, next_write(rewound, "three again", 2))
        assert await elsewhere.aversion(KEY) == (first.incarnation, 6)
        stored = await elsewhere.aload(KEY)
        assert stored is not None
        assert [m.text() for m in stored.context] == ["hi", "two", "three again"]
        assert [m.seq for m in await elsewhere.alist_messages(KEY)] == [0, 1, 2]
    finally:
        await here.aclose()
        await elsewhere.aclose()
