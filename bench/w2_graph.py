"""W2 through the whole runtime: 1,000 ``invoke`` turns on one SQLite thread, each adding a
user message and an assistant reply (load, run one node, save). Reported: median per-turn
time around turn 10 and around turn 1,000, their ratio, and the database file plus any WAL
left after the checkpointer is closed. Targets: <= 0.2 ms per turn (WAL,
``synchronous=NORMAL``, the library's setting), file <= 3 MB; ``w2_scaling`` checks the
per-turn time stays flat up to 100,000 messages. Floor: ``bench.floors.w2_sqlite_turn``.

Run: ``python -m bench.w2_graph``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import SqliteCheckpointer

TURNS = 1_000
SPAN = 20


def reply(state: AgentState) -> list[Message]:
    answer = f"Assistant answer number {len(state.context)}."
    return [Message.text_message(answer, role="assistant")]


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w2.sqlite")
        checkpointer = SqliteCheckpointer(path)
        graph = StateGraph(AgentState)
        graph.add_node("reply", reply)
        graph.set_entry_point("reply")
        app = graph.compile(checkpointer)
        config = {"thread_id": "w2"}
        times: list[float] = []
        for turn in range(1, TURNS + 1):
            question = {"messages": [Message.text_message(f"User question number {turn}?")]}
            start = time.perf_counter()
            app.invoke(question, config)
            times.append(time.perf_counter() - start)
        asyncio.run(checkpointer.aclose())  # the last connection folds the WAL into the file
        early = statistics.median(times[10 - SPAN // 2 : 10 + SPAN // 2])
        late = statistics.median(times[-SPAN:])
        files = [path, path + "-wal"]
        size = sum(os.path.getsize(file) for file in files if os.path.exists(file))
        return {
            "turn_10_ms": round(early * 1e3, 3),
            "turn_1000_ms": round(late * 1e3, 3),
            "ratio": round(late / early, 2),
            "files_mb": round(size / 1e6, 3),
        }


if __name__ == "__main__":
    print(run())
