"""openai-agents' figures for W6: a conversation's items in ``SQLiteSession``, its only
local store (a session has no graph or checkpoints, so W1-W4 have no counterpart).
Run in the peers venv only.

Each turn adds, with one ``add_items`` call, what a ``Runner`` run stores for a turn: the
user's input item and the model's output message (id, status, one ``output_text`` part),
with the texts of our W6. Stored: 100 sessions x 1,000 messages in one database file,
measured after ``close()``. Held: one session of 1,000 messages on the default in-memory
database; SQLite's pages are not Python allocations, so held is tracemalloc's growth plus
the database's ``page_count * page_size`` (read on the session's own connection, a
private attribute: the public API has no way to reach it).
"""

from __future__ import annotations

import asyncio
import gc
import os
import tempfile
import tracemalloc
from importlib.metadata import version
from typing import Any

from agents import SQLiteSession  # type: ignore[import-not-found]

NAME = "openai-agents"
THREADS = 100
MESSAGES = 1_000  # per session: 500 turns


def peer_version() -> str:
    return version("openai-agents")


def turn_items(thread: int, turn: int) -> list[dict[str, Any]]:
    question = f"Question {turn} in thread {thread}: how does this work?"
    answer = f"Answer {turn}: it works like this, step by step."
    message_id = f"msg_{thread:08x}{turn:08x}" + "0" * 32  # the 48 hex digits of OpenAI's ids
    return [
        {"role": "user", "content": question},
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": answer, "annotations": []}],
        },
    ]


async def fill(session: Any, thread: int) -> None:
    for turn in range(MESSAGES // 2):
        await session.add_items(turn_items(thread, turn))


async def fill_sessions(path: str) -> None:
    for thread in range(THREADS):
        session = SQLiteSession(f"thread-{thread}", path)
        await fill(session, thread)
        session.close()


async def held() -> int:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    session = SQLiteSession("thread-0")
    await fill(session, 0)
    gc.collect()
    python = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    connection = session._get_connection()
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    assert len(await session.get_items()) == MESSAGES
    session.close()
    return int(python + pages * page_size)


def w6_invoke() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w6.sqlite")
        asyncio.run(fill_sessions(path))
        size = sum(os.path.getsize(f) for f in (path, path + "-wal") if os.path.exists(f))
    return {
        "w6_stored_bytes_per_message": round(size / (THREADS * MESSAGES)),
        "w6_held_bytes_per_message": round(asyncio.run(held()) / MESSAGES),
    }


NOTES = {"w6_held_bytes_per_message": f"one session of {MESSAGES:,}, in-memory SQLite"}
