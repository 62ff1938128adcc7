"""Floors: what plain Python, ``sqlite3`` and pydantic do for each workload's work.

Each floor uses tenxgraph's own ``Message`` model (the data is the same; what differs
is everything around it), no graph, no runtime, no checkpointer. Its ratio to ours is
the price of the framework: routing, state, leases, checkpoints, validation on load.
SQLite floors use the library's settings: WAL and ``synchronous=NORMAL`` (a commit is
durable against a process crash, not against power loss before the next checkpoint).
Times are the best of several repeats, as ours are.

Run: ``python -m bench.floors``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sqlite3
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter

from bench import w4_resume, w5_trim, w6_invoke
from bench._timing import best_us
from tenxgraph.core.state import Message
from tenxgraph.core.state.message import TokenUsages

MESSAGES_ADAPTER = TypeAdapter(list[Message])


# --- W1 --------------------------------------------------------------------------------


def reply(messages: list[Message]) -> Message:
    return Message.text_message("ok", role="assistant")


def three_calls(question: Message) -> list[Message]:
    """W1's work without a graph: three plain calls, each appending one ``Message``."""
    messages = [question]
    for node in (reply, reply, reply):
        messages.append(node(messages))
    return messages


def w1_plain_calls() -> float:
    """Microseconds per ``three_calls``: a new list, three ``Message.text_message`` built."""
    question = Message.text_message("hi")
    assert len(three_calls(question)) == 4
    return best_us(lambda: three_calls(question), number=2_000)


async def areply(messages: list[Message]) -> Message:
    return Message.text_message("ok", role="assistant")


async def three_awaits(question: Message) -> list[Message]:
    """``three_calls`` as plain asyncio code: three awaited ``async def`` nodes."""
    messages = [question]
    for node in (areply, areply, areply):
        messages.append(await node(messages))
    return messages


def w1_plain_asyncio() -> float:
    """Microseconds per ``three_awaits`` run from sync code, as ``invoke`` is.

    DESIGN.md's W1 budget is "the plain-asyncio floor": the same work written as
    plain asyncio and run from synchronous code the cheapest standard way, one
    ``loop.run_until_complete`` on an event loop made once and reused (a new loop per
    call, as ``asyncio.run`` makes, would cost several times more).
    """
    question = Message.text_message("hi")
    loop = asyncio.new_event_loop()
    try:
        assert len(loop.run_until_complete(three_awaits(question))) == 4
        return best_us(lambda: loop.run_until_complete(three_awaits(question)), number=2_000)
    finally:
        loop.close()


# --- SQLite schema shared by W2, W4 and W6 ----------------------------------------------


def open_db(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode with WAL and ``synchronous=NORMAL``, tables made."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS messages (thread_id TEXT, seq INTEGER, body TEXT,"
        " PRIMARY KEY (thread_id, seq)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS threads (thread_id TEXT PRIMARY KEY, version INTEGER,"
        " state TEXT)"
    )
    return conn


def compact(message: Message) -> str:
    """Compact, lossless JSON: no whitespace, no ``None`` fields (they are the defaults)."""
    return message.model_dump_json(exclude_none=True)


def save_turn(conn: sqlite3.Connection, thread: str, seq: int, messages: list[Message]) -> None:
    """One transaction: insert the turn's message rows, update the thread's state row."""
    rows = [(thread, seq + offset, compact(message)) for offset, message in enumerate(messages)]
    state = json.dumps({"length": seq + len(messages), "status": "completed"})
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO messages VALUES (?, ?, ?)", rows)
    conn.execute(
        "INSERT INTO threads VALUES (?, 1, ?) ON CONFLICT (thread_id)"
        " DO UPDATE SET version = version + 1, state = excluded.state",
        (thread, state),
    )
    conn.execute("COMMIT")


# --- W2 --------------------------------------------------------------------------------


def w2_sqlite_turn(turns: int = 1_000) -> float:
    """Milliseconds per turn, median over ``turns`` turns on one thread: build the reply
    ``Message``, then ``save_turn`` with the question and the reply (two message rows and
    the state row in one transaction). The question is built before the clock starts, as
    in ``w2_graph``."""
    with tempfile.TemporaryDirectory() as directory:
        conn = open_db(os.path.join(directory, "w2.sqlite"))
        times: list[float] = []
        for turn in range(turns):
            question = Message.text_message(f"User question number {turn}?")
            start = time.perf_counter()
            answer = Message.text_message(f"Assistant answer number {2 * turn}.", role="assistant")
            save_turn(conn, "w2", 2 * turn, [question, answer])
            times.append(time.perf_counter() - start)
        conn.close()
    return round(statistics.median(times) * 1e3, 3)


# --- W3 --------------------------------------------------------------------------------


def w3_list_copy(size: int = 100_000) -> float:
    """Microseconds for ``list(left)`` of ``size`` messages: the least a reducer that
    returns a new list can do."""
    left = [Message.text_message(f"m{i}") for i in range(size)]
    return best_us(lambda: list(left), number=20)


# --- W4 --------------------------------------------------------------------------------


def load_and_turn(path: str, validate: Callable[[str], list[Any]]) -> int:
    """Open the database, read the thread's message rows in order, parse them as one JSON
    array with ``validate``, and save one turn (``save_turn``); return the length read."""
    conn = open_db(path)
    rows = conn.execute("SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", ("w4",))
    history = validate("[" + ",".join(body for (body,) in rows) + "]")
    question = Message.text_message("one more")
    answer = Message.text_message(f"reply {len(history) + 1}", role="assistant")
    save_turn(conn, "w4", len(history), [question, answer])
    conn.close()
    return len(history)


def w4_load_validate(repeats: int = 5) -> dict[str, float]:
    """Milliseconds to load W4's 10,000 messages and save one turn, best of ``repeats``
    (each on a fresh copy of the seeded file): with one ``TypeAdapter(list[Message])``
    validating the whole array, and with ``json.loads`` alone (no validation)."""
    history = w4_resume.history()
    figures: dict[str, float] = {}
    for name, validate in (
        ("validated_ms", MESSAGES_ADAPTER.validate_json),
        ("json_only_ms", json.loads),
    ):
        best = float("inf")
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as directory:
                path = os.path.join(directory, "w4.sqlite")
                seed = open_db(path)
                save_turn(seed, "w4", 0, history)
                seed.close()
                start = time.perf_counter()
                assert load_and_turn(path, validate) == len(history)
                best = min(best, time.perf_counter() - start)
        figures[name] = round(best * 1e3, 1)
    return figures


# --- W5 --------------------------------------------------------------------------------


def last_user_turns(messages: list[Message], turns: int) -> list[Message]:
    """The leading system message plus everything from the ``turns``-th last user message."""
    start, seen = 0, 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            seen += 1
            if seen == turns:
                start = index
                break
    head = messages[:1] if messages and messages[0].role == "system" else []
    return head + messages[start:]


def w5_plain_loop() -> float:
    """Microseconds for ``last_user_turns`` over W5's 10,000-message history, keeping 10."""
    messages = w5_trim.build_history().context
    kept = last_user_turns(messages, w5_trim.TURNS_KEPT)
    assert sum(message.role == "user" for message in kept) == w5_trim.TURNS_KEPT
    return best_us(lambda: last_user_turns(messages, w5_trim.TURNS_KEPT), number=2_000)


# --- W6 --------------------------------------------------------------------------------


def w6_messages(thread: int, turn: int) -> list[Message]:
    """W6's turn: the same question and answer (with token usage) as ``w6_invoke``."""
    usage = TokenUsages(completion_tokens=20, prompt_tokens=100, total_tokens=120)
    answer = f"Answer {turn}: it works like this, step by step."
    return [
        Message.text_message(f"Question {turn} in thread {thread}: how does this work?"),
        Message.text_message(answer, role="assistant", usages=usage),
    ]


def w6_compact_json() -> dict[str, int]:
    """Bytes per message for W6's 100 threads x 1,000 messages kept as ``compact`` JSON
    strings, one list per thread (tracemalloc after ``gc.collect()``), and stored: the same
    strings as rows of a WAL SQLite table (one transaction per thread), file bytes after
    close."""
    threads, per_thread = w6_invoke.THREADS, w6_invoke.MESSAGES
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = [
        [compact(m) for turn in range(per_thread // 2) for m in w6_messages(thread, turn)]
        for thread in range(threads)
    ]
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    sample = held[0][1]  # lossless: it validates back to a message that dumps the same
    assert compact(MESSAGES_ADAPTER.validate_json(f"[{sample}]")[0]) == sample
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w6.sqlite")
        conn = open_db(path)
        for thread, bodies in enumerate(held):
            rows = [(f"thread-{thread}", seq, body) for seq, body in enumerate(bodies)]
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO messages VALUES (?, ?, ?)", rows)
            conn.execute("COMMIT")
        conn.close()
        size = sum(os.path.getsize(f) for f in (path, path + "-wal") if os.path.exists(f))
    total = threads * per_thread
    return {
        "held_bytes_per_message": round((after - before) / total),
        "stored_bytes_per_message": round(size / total),
    }


def run() -> dict[str, Any]:
    return {
        "w1_us": w1_plain_calls(),
        "w1_asyncio_us": w1_plain_asyncio(),
        "w2_turn_ms": w2_sqlite_turn(),
        "w3_copy_us": w3_list_copy(),
        "w4": w4_load_validate(),
        "w5_us": w5_plain_loop(),
        "w6": w6_compact_json(),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
