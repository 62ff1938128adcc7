"""A long window read in chunks while they decode (``_sqlite_load``): same thread, same errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadWrite, _bulk_decode, sqlite
from tenxgraph.storage.checkpointer import _sqlite_load as load
from tenxgraph.storage.checkpointer._sqlite_load import split_window
from tenxgraph.storage.checkpointer.base import StoredThread

KEY = ThreadKey("long", "alice")
WINDOW = [(20, 30), (0, 13)]  # two ranges, out of order, so chunks cross a range's end


@pytest.fixture
def chunked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Chunks of 4 messages from 8 on; the sizes of the windows read in chunks."""
    monkeypatch.setattr(load, "CHUNK", 4)
    monkeypatch.setattr(sqlite, "CHUNKED_AT", 8)
    read: list[int] = []
    real = load.read_chunks

    def counted(conn: Any, query: str, tid: int, window: Any) -> load.ChunkDecoder:
        read.append(sum(end - start for start, end in window))
        return real(conn, query, tid, window)

    monkeypatch.setattr(sqlite, "read_chunks", counted)
    return read


def test_a_window_splits_into_consecutive_chunks() -> None:
    assert split_window([(0, 7)], 3) == [[(0, 3)], [(3, 6)], [(6, 7)]]
    assert split_window([(10, 12), (0, 5)], 3) == [[(10, 12), (0, 1)], [(1, 4)], [(4, 5)]]
    assert split_window([(0, 6)], 3) == [[(0, 3)], [(3, 6)]]
    assert split_window([], 3) == []


async def saved(path: Path, count: int = 30) -> list[Message]:
    messages = [
        Message.text_message(f"m{i}", role="assistant" if i % 2 else "user") for i in range(count)
    ]
    checkpointer = SqliteCheckpointer(path)
    try:
        await checkpointer.asave(KEY, ThreadWrite(0, messages, {"k": 1}, WINDOW, node="n", step=0))
    finally:
        await checkpointer.aclose()
    return [messages[seq] for start, end in WINDOW for seq in range(start, end)]


async def loaded(path: Path) -> StoredThread | None:
    checkpointer = SqliteCheckpointer(path)
    try:
        return await checkpointer.aload(KEY)
    finally:
        await checkpointer.aclose()


async def test_a_long_window_loads_in_chunks_as_it_would_at_once(
    tmp_path: Path, chunked: list[int]
) -> None:
    path = tmp_path / "t.db"
    context = await saved(path)
    at_once = await loaded(path)
    assert chunked == [23]
    chunked.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite, "CHUNKED_AT", 10_000)
        whole = await loaded(path)
    assert chunked == []
    assert at_once is not None and whole is not None
    assert at_once.context == context == whole.context
    assert at_once.context_chars == whole.context_chars
    assert (at_once.values, at_once.window, at_once.stamp) == ({"k": 1}, WINDOW, whole.stamp)


async def test_a_damaged_row_in_a_later_chunk_is_named(tmp_path: Path, chunked: list[int]) -> None:
    path = tmp_path / "t.db"
    await saved(path)
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE messages SET body = \'"role":"robot"}\' WHERE seq = 10')
    with pytest.raises(CorruptRecordError, match="message seq 10"):
        await loaded(path)
    assert chunked == [23]


async def test_a_row_in_another_form_falls_back_to_the_sql(
    tmp_path: Path, chunked: list[int]
) -> None:
    path = tmp_path / "t.db"
    context = await saved(path)
    with sqlite3.connect(path) as conn:  # the id kept in the body, as an older row has it
        mid, body = conn.execute("SELECT hex(mid), body FROM messages WHERE seq = 11").fetchone()
        whole = f'"message_id":"{mid.lower()}",' + body
        conn.execute("UPDATE messages SET mid = NULL, body = ? WHERE seq = 11", (whole,))
    thread = await loaded(path)
    assert thread is not None and thread.context == context
    assert chunked == [23]


async def test_an_error_while_decoding_reaches_the_caller(
    tmp_path: Path, chunked: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.db"
    await saved(path)

    def broken(joined: str, count: int) -> list[Message]:
        raise MemoryError("no room")

    monkeypatch.setattr(_bulk_decode, "validate_many", broken)
    with pytest.raises(MemoryError, match="no room"):
        await loaded(path)
