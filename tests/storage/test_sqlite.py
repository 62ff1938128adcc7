"""SQLite specifics: one WAL file shared by instances, sync callers, errors mapped."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tenxgraph._sync import run_sync
from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import StorageError
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadWrite

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
