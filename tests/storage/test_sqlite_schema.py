"""SQLite files written by earlier schemas load whole and take new turns.

The files are built here with the earlier DDL (``MIGRATIONS[:n]``) and rows
laid out as the code of that time wrote them, so the test does not depend
on old code being around.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message, TokenUsages, compact_json
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadStamp, ThreadWrite
from tenxgraph.storage.checkpointer._sqlite_schema import MIGRATIONS

ALICE = ThreadKey("chat", "alice")
BOB = ThreadKey("chat", "bob")  # same thread id, another user
LONE = ThreadKey("solo", "alice")


def old_messages(key: ThreadKey, count: int) -> list[Message]:
    usage = TokenUsages(completion_tokens=3, prompt_tokens=5, total_tokens=8)
    return [
        Message.text_message(f"{key.user_id}/{key.thread_id} {i}", role="assistant", usages=usage)
        if i % 2
        else Message.text_message(f"{key.user_id}/{key.thread_id} {i}")
        for i in range(count)
    ]


def write_schema_3(path: Path) -> dict[ThreadKey, list[Message]]:
    """A file as schema version 3 left it: three threads, their logs, checkpoints, a lease."""
    logs = {ALICE: old_messages(ALICE, 4), BOB: old_messages(BOB, 2), LONE: old_messages(LONE, 1)}
    with sqlite3.connect(path) as conn:
        for migration in MIGRATIONS[:3]:
            for statement in migration:
                conn.execute(statement)
        conn.execute(
            "CREATE TABLE schema_versions (component TEXT NOT NULL, version INTEGER NOT NULL, "
            "applied_at REAL NOT NULL, PRIMARY KEY (component, version))"
        )
        conn.executemany("INSERT INTO schema_versions VALUES ('threads', ?, 0)", [(1,), (2,), (3,)])
        for number, (key, log) in enumerate(logs.items()):
            user, thread = key.user_id, key.thread_id
            for seq, message in enumerate(log):
                usage = None if message.usages is None else message.usages.model_dump_json()
                conn.execute(
                    "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        user,
                        thread,
                        seq,
                        message.message_id,
                        message.role,
                        usage,
                        compact_json(message),
                    ),
                )
            for version in range(1, len(log) + 1):
                conn.execute(
                    "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        user,
                        thread,
                        version,
                        "node",
                        version,
                        version,
                        json.dumps({"turn": version}),
                        json.dumps([[0, version]]),
                        1000.0 + version,
                    ),
                )
            conn.execute(
                'INSERT INTO threads (user_id, thread_id, version, log_length, "values", '
                '"window", metadata, created_at, updated_at, incarnation) '
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user,
                    thread,
                    len(log),
                    len(log),
                    json.dumps({"turn": len(log)}),
                    json.dumps([[0, len(log)]]),
                    json.dumps({"n": number}),
                    1000.0,
                    2000.0 + number,
                    "legacy" if key == LONE else f"inc{number}",
                ),
            )
        conn.execute(
            "INSERT INTO leases VALUES ('alice', 'chat', 'run-1', ?, NULL)", (time.time() + 60,)
        )
    return logs


async def test_a_schema_3_file_loads_whole_and_takes_new_turns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    logs = write_schema_3(path)
    checkpointer = SqliteCheckpointer(path)
    try:
        for key, log in logs.items():
            stored = await checkpointer.aload(key)
            assert stored is not None
            assert stored.context == log
            assert stored.version == stored.log_length == len(log)
            assert stored.values == {"turn": len(log)}
            assert stored.window == [(0, len(log))]
            page = await checkpointer.alist_messages(key)
            assert [(m.seq, m.message) for m in page] == list(enumerate(log))
            checkpoints = await checkpointer.alist_checkpoints(key)
            assert [(c.version, c.log_length, c.values) for c in checkpoints] == [
                (v, v, {"turn": v}) for v in range(len(log), 0, -1)
            ]
        assert await checkpointer.aversion(LONE) == ("legacy", 1)
        listed = await checkpointer.alist_threads("alice")
        assert [(t.key, t.metadata) for t in listed] == [(LONE, {"n": 2}), (ALICE, {"n": 0})]
        # the lease taken before the migration still fences the thread
        holder, _ = await checkpointer.atake_thread(ALICE, "run-2", 60)
        assert holder == "run-1"

        stored = await checkpointer.aload(ALICE)
        assert stored is not None
        more = [Message.text_message("after the migration")]
        write = ThreadWrite(4, more, {"turn": 5}, [(0, 5)], node="n", step=5, lease="run-1")
        write.expected_incarnation, write.release_lease = "inc0", True
        assert await checkpointer.asave(ALICE, write) == ("inc0", 5)
        assert await checkpointer.atake_thread(ALICE, "run-2", 60) == (None, ("inc0", 5))
        stored = await checkpointer.aload(ALICE)
        assert stored is not None and stored.context == [*logs[ALICE], *more]
        bob = await checkpointer.aload(BOB)
        assert bob is not None and bob.context == logs[BOB]  # the other user's thread untouched

        assert await checkpointer.arewind(ALICE, ThreadStamp("inc0", 5), 2, lease="run-2") == (
            "inc0",
            6,
        )
        stored = await checkpointer.aload(ALICE)
        assert stored is not None and stored.context == logs[ALICE][:2]
        assert await checkpointer.adelete_thread(ALICE)
        assert await checkpointer.aload(ALICE) is None
        assert await checkpointer.alist_messages(ALICE) == []
        assert (await checkpointer.aload(BOB)) == bob
    finally:
        await checkpointer.aclose()
    with sqlite3.connect(path) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM schema_versions ORDER BY 1")]
        assert versions == list(range(1, len(MIGRATIONS) + 1))
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        assert not {name for name in tables if name.endswith("_4")}  # rebuilt tables renamed
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone() == (3,)  # bob's, solo's


async def test_a_new_file_stores_a_message_as_its_seq_id_timestamp_and_body(
    tmp_path: Path,
) -> None:
    """Message rows hold the thread's row id, the seq, the id's 16 bytes, the timestamp's
    repr and the rest of the JSON object, nothing else."""
    path = tmp_path / "new.db"
    checkpointer = SqliteCheckpointer(path)
    message = Message.text_message("hi")
    await checkpointer.asave(ALICE, ThreadWrite(0, [message], {}, [(0, 1)], node="n", step=0))
    await checkpointer.aclose()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT * FROM messages").fetchall()
        (tid,) = conn.execute("SELECT id FROM threads").fetchone()
    rest = compact_json(message).replace(f'"message_id":"{message.message_id}",', "")
    rest = rest.replace(f',"timestamp":{message.timestamp!r}', "")
    assert rows == [
        (tid, 0, rest[1:], bytes.fromhex(str(message.message_id)), repr(message.timestamp))
    ]
