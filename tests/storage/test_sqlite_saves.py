"""``SqliteSaves``: a save from the stamp the instance's last save left updates the row by id.

That statement still compares the stored incarnation, version and log length,
so a thread changed by anyone else since (another instance, a delete and
re-create) makes it change nothing, and the save goes on with the keyed
statement, which fails or succeeds as it always did. What an instance
remembers is bounded (``REMEMBERED`` threads, the least recently saved go).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.errors import ConflictError, CorruptRecordError
from tenxgraph.storage.checkpointer import (
    SqliteCheckpointer,
    ThreadStamp,
    ThreadWrite,
    _sqlite_save,
)
from tenxgraph.testing._thread_leases import turn as leased_turn

KEY = ThreadKey("saves", "alice")
BY_ID = "WHERE id = "
"""The by-id update (the trace shows statements with their parameters filled in)."""


def turn(stamp: ThreadStamp | None, text: str, log_length: int) -> ThreadWrite:
    """A write adding one message after ``stamp`` (None: creating the thread), no lease."""
    return leased_turn(stamp, text, log_length, None)


def updates(statements: list[str]) -> list[str]:
    """Which form each state-row update of ``statements`` took: by id or by key."""
    return [
        "by id" if BY_ID in sql else "keyed"
        for sql in statements
        if sql.startswith("UPDATE threads SET version")
    ]


@pytest.fixture
def checkpointer(tmp_path: Path) -> Iterator[SqliteCheckpointer]:
    made = SqliteCheckpointer(tmp_path / "saves.db")
    yield made
    made._db.close()


@pytest.fixture
def other(checkpointer: SqliteCheckpointer) -> Iterator[SqliteCheckpointer]:
    """Another instance on the same file (as another process): its own connection."""
    made = SqliteCheckpointer(checkpointer.path)
    yield made
    made._db.close()


async def two_turns(checkpointer: SqliteCheckpointer) -> ThreadStamp:
    """The thread made and saved once more by ``checkpointer``: the stamp it remembers."""
    first = await checkpointer.asave(KEY, turn(None, "one", 0))
    return await checkpointer.asave(KEY, turn(first, "two", 1))


def traced(checkpointer: SqliteCheckpointer) -> list[str]:
    """Every statement the instance's connection runs from now on (it must be open)."""
    statements: list[str] = []
    checkpointer._db._conn.set_trace_callback(statements.append)  # type: ignore[union-attr]
    return statements


async def texts(checkpointer: SqliteCheckpointer, key: ThreadKey = KEY) -> list[str]:
    return [stored.message.text() for stored in await checkpointer.alist_messages(key)]


async def test_a_save_from_the_last_stamp_updates_the_row_by_its_id(
    checkpointer: SqliteCheckpointer,
) -> None:
    stamp = await checkpointer.asave(KEY, turn(None, "one", 0))
    statements = traced(checkpointer)
    for number, text in enumerate(["two", "three", "four"], start=1):
        stamp = await checkpointer.asave(KEY, turn(stamp, text, number))
    assert updates(statements) == ["by id", "by id", "by id"]
    assert not any("RETURNING" in sql for sql in statements)  # the row count says it won
    assert stamp.version == 4
    assert await texts(checkpointer) == ["one", "two", "three", "four"]
    stored = await checkpointer.aload(KEY)
    assert stored is not None and stored.stamp == stamp and stored.values == {"by": "four"}


async def test_a_thread_another_instance_changed_is_saved_by_key_and_conflicts(
    checkpointer: SqliteCheckpointer, other: SqliteCheckpointer
) -> None:
    mine = await two_turns(checkpointer)
    theirs = await other.asave(KEY, turn(mine, "theirs", 2))
    statements = traced(checkpointer)
    with pytest.raises(ConflictError) as raised:  # remembered, but stale: by id, then keyed
        await checkpointer.asave(KEY, turn(mine, "lost", 2))
    assert (raised.value.expected, raised.value.actual) == (2, 3)
    assert updates(statements) == ["by id", "keyed"]
    statements.clear()
    again = await checkpointer.asave(KEY, turn(theirs, "three", 3))  # forgotten: keyed
    await checkpointer.asave(KEY, turn(again, "four", 4))  # remembered again: by id
    assert updates(statements) == ["keyed", "by id"]
    assert await texts(checkpointer) == ["one", "two", "theirs", "three", "four"]


async def test_a_thread_deleted_and_made_again_elsewhere_is_not_updated_by_its_old_id(
    checkpointer: SqliteCheckpointer, other: SqliteCheckpointer
) -> None:
    mine = await two_turns(checkpointer)
    await other.adelete_thread(KEY)
    remade = await other.asave(KEY, turn(None, "new", 0))
    await other.asave(KEY, turn(remade, "new two", 1))
    with pytest.raises(ConflictError) as raised:
        await checkpointer.asave(KEY, turn(mine, "lost", 2))
    assert raised.value.recreated
    assert await texts(checkpointer) == ["new", "new two"]


async def test_an_instance_remembers_the_threads_it_saved_last(
    checkpointer: SqliteCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_save, "REMEMBERED", 3)
    stamps: dict[str, ThreadStamp] = {}
    for name in ["t1", "t2", "t3", "t2", "t4"]:
        key = ThreadKey(name, "alice")
        before = stamps.get(name)
        stamps[name] = await checkpointer.asave(
            key, turn(before, name, 0 if before is None else before.version)
        )
    remembered = checkpointer._saves._rows
    assert list(remembered) == [("alice", "t3"), ("alice", "t2"), ("alice", "t4")]
    for (_, name), (incarnation, version, _tid, length) in remembered.items():
        assert (incarnation, version) == stamps[name]
        assert length == version  # one message a save
    statements = traced(checkpointer)
    for name in ["t4", "t1"]:  # t1 was forgotten first: its next save is keyed
        key = ThreadKey(name, "alice")
        stamps[name] = await checkpointer.asave(
            key, turn(stamps[name], "more", stamps[name].version)
        )
    assert updates(statements) == ["by id", "keyed"]
    assert await texts(checkpointer, ThreadKey("t1", "alice")) == ["t1", "more"]


async def test_a_conflict_over_a_damaged_version_names_the_thread(
    checkpointer: SqliteCheckpointer,
) -> None:
    stamp = await checkpointer.asave(KEY, turn(None, "one", 0))
    with sqlite3.connect(checkpointer.path) as conn:
        conn.execute("UPDATE threads SET version = 'one' WHERE thread_id = ?", (KEY.thread_id,))
    with pytest.raises(
        CorruptRecordError, match=r"thread 'saves' \(user 'alice'\): column 'version'"
    ):
        await checkpointer.asave(KEY, turn(stamp, "two", 1))
    assert await texts(checkpointer) == ["one"]
