"""Rows damaged on disk raise ``CorruptRecordError`` naming the thread, row and field."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer, ThreadWrite
from tests.storage.conftest import PG_DSN, drop_schema

KEY = ThreadKey("broken-thread", "alice")

Raw = Callable[[str, tuple[Any, ...]], Awaitable[None]]
"""Runs SQL written with ``?`` placeholders and ``{t}`` before table names."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str
) -> AsyncIterator[tuple[Checkpointer, Raw]]:
    checkpointer: Checkpointer
    if request.param == "sqlite":
        path = tmp_path / "threads.db"
        checkpointer = SqliteCheckpointer(path)

        async def raw(sql: str, params: tuple[Any, ...]) -> None:
            # a body written whole: the id and timestamp columns are cleared, as in a row
            # written before them, so the row holds exactly that object
            sql = sql.replace(
                "messages SET body = ?", "messages SET mid = NULL, ts = NULL, body = ?"
            )
            with sqlite3.connect(path) as conn:
                conn.execute(sql.format(t=""), params)

        yield checkpointer, raw
        await checkpointer.aclose()
        return

    import psycopg

    from tenxgraph.storage.checkpointer import PgCheckpointer

    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)

    async def pg_raw(sql: str, params: tuple[Any, ...]) -> None:
        query = sql.format(t=f'"{pg_schema}".').replace("?", "%s")
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(query, params)

    yield checkpointer, pg_raw
    await checkpointer.aclose()
    await drop_schema(pg_schema)


async def saved(checkpointer: Checkpointer) -> None:
    messages = [Message.text_message(f"m{i}") for i in range(3)]
    await checkpointer.asave(
        KEY,
        ThreadWrite(0, messages, {"context_summary": None}, [(0, 3)], node="n", step=1),
    )


async def expect_corrupt(checkpointer: Checkpointer, *patterns: str) -> None:
    for call in (
        checkpointer.aload(KEY),
        checkpointer.alist_messages(KEY),
        checkpointer.aload_messages(KEY, [(0, 3)]),
    ):
        with pytest.raises(CorruptRecordError) as raised:
            await call
        for pattern in ("broken-thread", *patterns):
            assert pattern in str(raised.value)


async def test_invalid_message_names_thread_seq_and_field(
    store: tuple[Checkpointer, Raw],
) -> None:
    checkpointer, raw = store
    await saved(checkpointer)
    await raw(
        "UPDATE {t}messages SET body = ? WHERE seq = 1",
        ('{"role": "robot", "content": [], "message_id": "x"}',),
    )
    await expect_corrupt(checkpointer, "message seq 1", "'role'")


async def test_invalid_content_block_names_the_nested_field(
    store: tuple[Checkpointer, Raw],
) -> None:
    checkpointer, raw = store
    await saved(checkpointer)
    await raw(
        "UPDATE {t}messages SET body = ? WHERE seq = 2",
        ('{"role": "user", "content": [{"type": "text"}], "message_id": "x"}',),
    )
    await expect_corrupt(checkpointer, "message seq 2", "content.0.text")


async def test_invalid_json_body(tmp_path: Path) -> None:
    """Only SQLite can hold text that is not JSON at all (Postgres' json type refuses it)."""
    path = tmp_path / "threads.db"
    checkpointer = SqliteCheckpointer(path)
    try:
        await saved(checkpointer)
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE messages SET body = '{not json' WHERE seq = 0")
        await expect_corrupt(checkpointer, "message seq 0", "'body'", "Invalid JSON")
    finally:
        await checkpointer.aclose()


async def test_bad_state_row_columns(store: tuple[Checkpointer, Raw]) -> None:
    checkpointer, raw = store
    await saved(checkpointer)
    await raw('UPDATE {t}threads SET "values" = ?', ("[1, 2]",))
    with pytest.raises(CorruptRecordError, match=r"broken-thread.*'values'.*list"):
        await checkpointer.aload(KEY)
    await raw('UPDATE {t}threads SET "values" = ?, "window" = ?', ("{}", "[[3, 1]]"))
    with pytest.raises(CorruptRecordError, match=r"broken-thread.*'window'"):
        await checkpointer.aload(KEY)
    await raw('UPDATE {t}checkpoints SET "window" = ?', ('"oops"',))
    with pytest.raises(CorruptRecordError, match=r"broken-thread.*'checkpoint window'"):
        await checkpointer.alist_checkpoints(KEY)


async def test_missing_log_row_is_not_skipped(store: tuple[Checkpointer, Raw]) -> None:
    checkpointer, raw = store
    await saved(checkpointer)
    await raw("DELETE FROM {t}messages WHERE seq = 1", ())
    with pytest.raises(CorruptRecordError, match=r"names 3 messages but the log lacks 1 .*\[1\]"):
        await checkpointer.aload(KEY)
    with pytest.raises(CorruptRecordError, match="names 3 messages"):
        await checkpointer.aload_messages(KEY, [(0, 3)])
