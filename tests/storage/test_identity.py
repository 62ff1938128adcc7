"""Thread identity on every backend: a deleted and re-created thread is another thread.

A thread's stamp is its incarnation (made when it is created) and its
version. A writer still holding a thread that was deleted and saved again up
to the same version (ABA) must lose its compare-and-swap and write nothing.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message, compact_json
from tenxgraph.errors import ConflictError, StateError
from tenxgraph.runs import lease_owner
from tenxgraph.storage.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    SqliteCheckpointer,
    StoredThread,
    ThreadStamp,
    ThreadWrite,
)
from tenxgraph.storage.checkpointer._codec import new_incarnation
from tenxgraph.storage.checkpointer._sqlite_schema import MIGRATIONS as SQLITE_MIGRATIONS
from tenxgraph.storage.sql._migrations import LEGACY_TOMBSTONE
from tests.storage.conftest import PG_DSN, MakeCheckpointer, drop_schema

KEY = ThreadKey("identity", "alice")


def turn(
    stamp: ThreadStamp | None, text: str, log_length: int, incarnation: str | None = None
) -> ThreadWrite:
    """A write adding one message after ``stamp`` (None: creating), the window covering all."""
    return ThreadWrite(
        expected_version=0 if stamp is None else stamp.version,
        new_messages=[Message.text_message(text)],
        values={"by": text},
        window=[(0, log_length + 1)],
        node="n",
        step=log_length,
        expected_incarnation=incarnation if stamp is None else stamp.incarnation,
    )


async def run_turns(checkpointer: Checkpointer, texts: list[str]) -> ThreadStamp:
    """Create KEY (which must not exist) and save one message per text."""
    stamp: ThreadStamp | None = None
    for length, text in enumerate(texts):
        stamp = await checkpointer.asave(KEY, turn(stamp, text, length))
    assert stamp is not None
    return stamp


async def snapshot(checkpointer: Checkpointer) -> tuple[Any, ...]:
    """Everything stored for KEY, to show a refused write changed nothing."""
    stored = await checkpointer.aload(KEY)
    assert stored is not None
    log = [(m.seq, m.message.text()) for m in await checkpointer.alist_messages(KEY)]
    checkpoints = [(c.version, c.log_length) for c in await checkpointer.alist_checkpoints(KEY)]
    return stored.stamp, stored.log_length, stored.values, stored.window, log, checkpoints


async def test_a_writer_holding_a_recreated_thread_loses_even_at_the_same_version(
    checkpointer: Checkpointer,
) -> None:
    held = await run_turns(checkpointer, ["a1", "a2"])  # writer A holds version 2 mid-run
    assert await checkpointer.adelete_thread(KEY)
    reborn = await run_turns(checkpointer, ["b1", "b2"])  # writer B re-creates it to version 2
    assert reborn.version == held.version and reborn.incarnation != held.incarnation
    before = await snapshot(checkpointer)
    with pytest.raises(ConflictError, match="deleted and re-created") as raised:
        await checkpointer.asave(KEY, turn(held, "a3", 2))
    assert raised.value.recreated
    assert (raised.value.expected, raised.value.actual) == (2, 2)
    assert await snapshot(checkpointer) == before  # nothing written
    stored = await checkpointer.aload(KEY)
    assert stored is not None and [m.text() for m in stored.context] == ["b1", "b2"]
    assert await checkpointer.asave(KEY, turn(reborn, "b3", 2)) == (reborn.incarnation, 3)


async def test_the_right_version_with_a_wrong_incarnation_is_refused(
    checkpointer: Checkpointer,
) -> None:
    stamp = await run_turns(checkpointer, ["a"])
    before = await snapshot(checkpointer)
    for wrong in ("0123456789abcdef", stamp.incarnation.upper(), "legacy"):
        with pytest.raises(ConflictError, match="deleted and re-created"):
            await checkpointer.asave(KEY, turn(ThreadStamp(wrong, stamp.version), "x", 1))
    assert await snapshot(checkpointer) == before


async def test_a_stale_version_of_the_same_incarnation_is_a_plain_conflict(
    checkpointer: Checkpointer,
) -> None:
    first = await run_turns(checkpointer, ["a"])
    await checkpointer.asave(KEY, turn(first, "b", 1))
    with pytest.raises(ConflictError, match="changed by another run") as raised:
        await checkpointer.asave(KEY, turn(first, "late", 1))
    assert not raised.value.recreated
    with pytest.raises(ConflictError, match="changed by another run") as raised:
        await checkpointer.asave(KEY, turn(None, "create again", 0))
    assert not raised.value.recreated


async def test_a_deleted_thread_refuses_its_old_writers(checkpointer: Checkpointer) -> None:
    held = await run_turns(checkpointer, ["a"])
    await checkpointer.adelete_thread(KEY)
    with pytest.raises(ConflictError, match="found None"):
        await checkpointer.asave(KEY, turn(held, "ghost", 1))
    assert await checkpointer.aload(KEY) is None
    assert await checkpointer.alist_messages(KEY) == []


async def test_every_creation_makes_a_new_incarnation_that_saves_keep(
    make_checkpointer: MakeCheckpointer,
) -> None:
    checkpointer = make_checkpointer()
    seen = set()
    for _ in range(3):
        stamp = await run_turns(checkpointer, ["a", "b"])
        assert len(stamp.incarnation) == 16 and int(stamp.incarnation, 16) >= 0
        seen.add(stamp.incarnation)
        stored = await checkpointer.aload(KEY)
        assert isinstance(stored, StoredThread) and stored.stamp == stamp
        assert await checkpointer.aversion(KEY) == stamp
        await checkpointer.adelete_thread(KEY)
    assert len(seen) == 3
    stamp = await run_turns(checkpointer, ["kept"])
    await checkpointer.aclose()
    memory = isinstance(checkpointer, InMemoryCheckpointer)
    reopened = checkpointer if memory else make_checkpointer()
    assert await reopened.aversion(KEY) == stamp  # durable backends store the identity


async def test_an_incarnation_is_required_exactly_when_the_thread_exists(
    checkpointer: Checkpointer,
) -> None:
    with pytest.raises(StateError, match="expected_incarnation must be None"):
        await checkpointer.asave(KEY, turn(None, "a", 0, incarnation="0123456789abcdef"))
    assert await checkpointer.aload(KEY) is None
    stamp = await run_turns(checkpointer, ["a"])
    before = await snapshot(checkpointer)
    for missing in (None, ""):
        write = turn(stamp, "b", 1)
        write.expected_incarnation = missing
        with pytest.raises(StateError, match="needs expected_incarnation"):
            await checkpointer.asave(KEY, write)
    assert await snapshot(checkpointer) == before


async def test_sqlite_threads_from_before_incarnations_get_the_legacy_one(tmp_path: Any) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # schema version 1, as an older release left it
        for statement in SQLITE_MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute(  # and its version table, from before components
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        conn.execute("INSERT INTO schema_version VALUES (1, 0)")
        old = Message.text_message("old")
        conn.execute(
            "INSERT INTO messages VALUES (?, ?, 0, ?, 'user', NULL, ?)",
            (KEY.user_id, KEY.thread_id, old.message_id, compact_json(old)),
        )
        conn.execute(
            "INSERT INTO checkpoints VALUES (?, ?, 1, 'n', 0, 1, ?, '[[0,1]]', 0)",
            (KEY.user_id, KEY.thread_id, json.dumps({"by": "old"})),
        )
        conn.execute(
            "INSERT INTO threads VALUES (?, ?, 1, 1, ?, '[[0,1]]', '{}', 0, 0)",
            (KEY.user_id, KEY.thread_id, json.dumps({"by": "old"})),
        )
    checkpointer = SqliteCheckpointer(path)
    try:
        await continue_a_legacy_thread(checkpointer)
    finally:
        await checkpointer.aclose()
    with sqlite3.connect(path) as conn:
        applied = conn.execute(
            "SELECT component, version FROM schema_versions ORDER BY version"
        ).fetchall()
        assert applied == [("threads", v) for v in range(1, len(SQLITE_MIGRATIONS) + 1)]
        legacy = [v for (v,) in conn.execute("SELECT version FROM schema_version")]
        assert legacy == [LEGACY_TOMBSTONE]  # an older release refuses the file as newer


@pytest.mark.postgres
async def test_postgres_threads_from_before_incarnations_get_the_legacy_one(
    pg_schema: str,
) -> None:
    import psycopg

    from tenxgraph.storage.checkpointer import PgCheckpointer

    try:
        checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)
        await run_turns(checkpointer, ["old"])
        await checkpointer.aclose()
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(f'ALTER TABLE "{pg_schema}".threads DROP COLUMN incarnation')
            await conn.execute(f'ALTER TABLE "{pg_schema}".checkpoints DROP COLUMN parent_version')
            await conn.execute(f'DROP TABLE "{pg_schema}".leases')
            await conn.execute(f'DROP TABLE "{pg_schema}".schema_versions')
            await conn.execute(
                f'CREATE TABLE "{pg_schema}".schema_version '
                "(version integer PRIMARY KEY, applied_at double precision NOT NULL)"
            )
            await conn.execute(f'INSERT INTO "{pg_schema}".schema_version VALUES (1, 0)')
        checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)
        await continue_a_legacy_thread(checkpointer)
        await checkpointer.aclose()
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            cursor = await conn.execute(
                f'SELECT component, version FROM "{pg_schema}".schema_versions ORDER BY version'
            )
            assert await cursor.fetchall() == [("threads", v) for v in range(1, 5)]
            cursor = await conn.execute(f'SELECT version FROM "{pg_schema}".schema_version')
            assert await cursor.fetchall() == [(LEGACY_TOMBSTONE,)]
    finally:
        await drop_schema(pg_schema)


async def continue_a_legacy_thread(checkpointer: Checkpointer) -> None:
    """A migrated thread has the incarnation "legacy" and goes on; a new one gets another."""
    stored = await checkpointer.aload(KEY)
    assert stored is not None and stored.stamp == ("legacy", 1)
    assert await checkpointer.aversion(KEY) == ("legacy", 1)
    assert await checkpointer.asave(KEY, turn(stored.stamp, "new", 1)) == ("legacy", 2)
    await checkpointer.adelete_thread(KEY)
    reborn = await run_turns(checkpointer, ["reborn"])
    assert reborn.incarnation != "legacy"
    with pytest.raises(ConflictError, match="deleted and re-created"):
        await checkpointer.asave(KEY, turn(ThreadStamp("legacy", 1), "stale", 1))


FORKING_CHILD = r"""
import os
from tenxgraph.runs import lease_owner
from tenxgraph.storage.checkpointer._codec import new_incarnation
pid = os.fork()
os.write(1, f"{new_incarnation()} {lease_owner('run')}\n".encode())  # one write: no interleaving
if pid:
    os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_incarnations_and_lease_owners_are_hex_and_never_shared_with_a_forked_child() -> None:
    """Both come from the message ids' generator, which a forked child seeds anew."""
    ids = [new_incarnation() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{16}", incarnation) for incarnation in ids)
    assert len(set(ids)) == len(ids)
    assert re.fullmatch(r"r1/[0-9a-f]{8}", lease_owner("r1"))
    # a fresh interpreter: forking this multi-threaded test process would be unsafe
    done = subprocess.run(
        [sys.executable, "-c", FORKING_CHILD], capture_output=True, text=True, check=True
    )
    lines = done.stdout.split("\n")[:2]
    parent, child = (line.split() for line in lines)
    assert parent[0] != child[0] and parent[1] != child[1]
