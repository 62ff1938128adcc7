"""W2 scaling: the per-turn time of ``app.invoke`` on threads already holding 10, 1,000,
10,000 and 100,000 messages, on the in-memory and the SQLite checkpointer.
Target: the turn at 100,000 <= 1.5x the turn at 1,000, on both.

A turn is one user message in and one assistant reply from the graph's one node (load
or reuse the thread, run the node, save), as in ``w2_graph``. Each thread is seeded in
one call (``app.create_thread`` with alternating user and assistant messages), then
``WARMUP`` untimed turns (the first one loads the thread; later ones find it warm), then
``TURNS`` timed turns; reported is their median. A thread whose turns stay slow stops
after ``TIME_LIMIT_S`` seconds of timed turns, so a linear cost shows without making the
run wait; ``turns`` says how many were timed.

Each (checkpointer, size) runs in a fresh process, so one size's garbage and caches do
not slow the next, and the process's peak resident memory (``ru_maxrss``, which includes
the interpreter and the seeded messages) comes for free. SQLite uses the library's
settings: WAL, ``synchronous=NORMAL``.

Run: ``python -m bench.w2_scaling``.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import tempfile
import time
from typing import Any

from bench._child import run_child
from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer, SqliteCheckpointer

SIZES = (10, 1_000, 10_000, 100_000)
BACKENDS = ("memory", "sqlite")
WARMUP = 3
TURNS = 50
TIME_LIMIT_S = 20.0


def reply(state: AgentState) -> list[Message]:
    answer = f"Assistant answer number {len(state.context)}."
    return [Message.text_message(answer, role="assistant")]


def one_node(checkpointer: Checkpointer) -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph.compile(checkpointer)  # default settings: the warm cache as shipped


def history(size: int) -> list[Message]:
    """``size`` alternating user questions and assistant answers (well paired)."""
    return [
        Message.text_message(f"User question number {i}: what about this?")
        if i % 2 == 0
        else Message.text_message(f"Assistant answer number {i}.", role="assistant")
        for i in range(size)
    ]


def time_turns(app: CompiledGraph[AgentState], config: dict[str, Any]) -> list[float]:
    """Seconds per timed turn, after the warm-up turns."""
    times: list[float] = []
    for turn in range(WARMUP + TURNS):
        question = {"messages": [Message.text_message(f"User question at turn {turn}?")]}
        start = time.perf_counter()
        app.invoke(question, config)
        elapsed = time.perf_counter() - start
        if turn >= WARMUP:
            times.append(elapsed)
            if sum(times) > TIME_LIMIT_S:
                break
    return times


def measure(backend: str, size: int) -> dict[str, Any]:
    """One size on one checkpointer (run inside the child process)."""
    with tempfile.TemporaryDirectory() as directory:
        checkpointer: Checkpointer = (
            InMemoryCheckpointer()
            if backend == "memory"
            else SqliteCheckpointer(os.path.join(directory, "w2.sqlite"))
        )
        app = one_node(checkpointer)
        config = {"thread_id": "w2-scaling"}
        messages = history(size)
        start = time.perf_counter()
        app.create_thread(config, messages)
        del messages
        seeded = time.perf_counter() - start
        times = time_turns(app, config)
    return {
        "turn_ms": round(statistics.median(times) * 1e3, 3),
        "turns": len(times),
        "seed_s": round(seeded, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def run() -> dict[str, Any]:
    result: dict[str, Any] = {}
    for backend in BACKENDS:
        figures = {
            str(size): run_child("bench.w2_scaling", "--one", backend, str(size)) for size in SIZES
        }
        ratio = figures["100000"]["turn_ms"] / figures["1000"]["turn_ms"]
        result[backend] = {"by_size": figures, "ratio_100k_to_1k": round(ratio, 2)}
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
    else:
        print(json.dumps(run(), indent=2))
