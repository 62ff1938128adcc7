"""W2 at the storage layer: 1,000 turns on one thread, each saving a user message and a reply.

Each turn is one ``asave`` with its expected incarnation and version (the
state is kept between turns, as a run does). Reported: the median per-turn time around
turn 10 and around turn 1,000 (20-turn windows), their ratio, the time to
load the finished thread, and for SQLite the file size after 1,000 turns.
Budgets: ratio <= 1.5, <= 1 ms per turn, file <= 3 MB (SQLite). The file
is measured after close; while open, the WAL beside it stays under ~1 MB.

Run: ``python -m bench.w2_turns``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from typing import Any

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message, TokenUsages
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer, ThreadWrite

TURNS = 1_000
SPAN = 20
PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"


def turn_messages(turn: int) -> list[Message]:
    usage = TokenUsages(completion_tokens=12, prompt_tokens=40 + turn, total_tokens=52 + turn)
    return [
        Message.text_message(f"User question number {turn}: what about this?"),
        Message.text_message(f"Assistant answer number {turn}.", role="assistant", usages=usage),
    ]


async def turns(checkpointer: Checkpointer, key: ThreadKey) -> dict[str, Any]:
    incarnation: str | None = None
    version, length = 0, 0
    times: list[float] = []
    for turn in range(1, TURNS + 1):
        messages = turn_messages(turn)
        values = {
            "context_summary": None,
            "execution_meta": {"current_node": "MAIN", "step": turn, "status": "completed"},
        }
        start = time.perf_counter()
        write = ThreadWrite(version, messages, values, [(0, length + 2)], node="MAIN", step=turn)
        write.expected_incarnation = incarnation
        incarnation, version = await checkpointer.asave(key, write)
        times.append(time.perf_counter() - start)
        length += 2
    early = statistics.median(times[10 - SPAN // 2 : 10 + SPAN // 2])
    late = statistics.median(times[-SPAN:])
    start = time.perf_counter()
    stored = await checkpointer.aload(key)
    load = time.perf_counter() - start
    assert stored is not None and len(stored.context) == 2 * TURNS
    return {
        "turn_10_ms": round(early * 1e3, 3),
        "turn_1000_ms": round(late * 1e3, 3),
        "ratio": round(late / early, 2),
        "mean_ms": round(statistics.fmean(times) * 1e3, 3),
        "load_2000_messages_ms": round(load * 1e3, 2),
    }


async def sqlite() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w2.db")
        checkpointer = SqliteCheckpointer(path)
        result = await turns(checkpointer, ThreadKey("w2"))
        wal = path + "-wal"
        result["wal_mb_before_close"] = round(
            await asyncio.to_thread(os.path.getsize, wal) / 1e6, 3
        )
        await checkpointer.aclose()  # the last connection folds the WAL into the file
        result["file_mb"] = round(await asyncio.to_thread(os.path.getsize, path) / 1e6, 3)
        result["wal_left"] = await asyncio.to_thread(os.path.exists, wal)
    return result


async def postgres(redis: bool, dsn: str = PG_DSN) -> dict[str, Any]:
    import psycopg

    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    schema = f"bench_w2_{uuid.uuid4().hex[:8]}"
    prefix = f"bench-w2-{uuid.uuid4().hex[:8]}:"
    cache = RedisThreadCache(REDIS_URL, prefix=prefix) if redis else None
    checkpointer = PgCheckpointer(dsn, schema=schema, redis=cache)
    try:
        return await turns(checkpointer, ThreadKey("w2"))
    finally:
        await checkpointer.adelete_thread(ThreadKey("w2"))  # also evicts the Redis entry
        await checkpointer.aclose()
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def run(*, with_postgres: bool = True) -> dict[str, Any]:
    """Measure SQLite, and Postgres without and with the Redis cache.

    Postgres commits wait for the server's WAL flush by default; the
    ``no_flush_wait`` figure (``synchronous_commit=off`` through the DSN)
    shows how much of a turn is that flush rather than tenxgraph.
    """
    result = {"turns": TURNS, "sqlite": asyncio.run(sqlite())}
    if with_postgres:
        result["postgres"] = asyncio.run(postgres(redis=False))
        result["postgres+redis"] = asyncio.run(postgres(redis=True))
        result["postgres_no_flush_wait"] = asyncio.run(
            postgres(redis=False, dsn=PG_DSN + "?options=-c%20synchronous_commit%3Doff")
        )
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
