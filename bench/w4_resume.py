"""W4: a fresh process loads a 10,000-message thread from SQLite and runs one turn.
Target <= 60 ms, measured inside the fresh process (imports and building the graph
excluded), the best of ``RUNS`` fresh processes on the same file. Floor:
``bench.floors.w4_load_validate``.

Run: ``python -m bench.w4_resume``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

from bench._child import run_child
from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadWrite

MESSAGES = 10_000
RUNS = 3


def reply(state: AgentState) -> list[Message]:
    return [Message.text_message(f"reply {len(state.context)}", role="assistant")]


def build(path: str) -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph.compile(SqliteCheckpointer(path))


def history() -> list[Message]:
    """Alternating user and assistant messages (shared with the floor)."""
    return [
        Message.text_message(f"message {i} " * 4, role="assistant" if i % 2 else "user")
        for i in range(MESSAGES)
    ]


def seed(path: str) -> None:
    values = AgentState().model_dump(mode="json", exclude={"context"})
    write = ThreadWrite(0, history(), values, [(0, MESSAGES)], node="seed", step=0)
    asyncio.run(save_and_close(SqliteCheckpointer(path), write))


async def save_and_close(checkpointer: SqliteCheckpointer, write: ThreadWrite) -> None:
    await checkpointer.asave(ThreadKey("w4"), write)
    await checkpointer.aclose()


def one_turn(path: str) -> dict[str, Any]:
    app = build(path)
    start = time.perf_counter()
    result = app.invoke({"messages": [Message.text_message("one more")]}, {"thread_id": "w4"})
    elapsed = time.perf_counter() - start
    assert len(result["state"].context) == MESSAGES + 2
    return {"load_and_turn_ms": round(elapsed * 1e3, 1)}


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        runs = []
        for attempt in range(RUNS):
            path = os.path.join(directory, f"w4-{attempt}.sqlite")
            seed(path)  # a fresh file each time, so every run loads the same 10,000
            runs.append(run_child("bench.w4_resume", "--turn", path)["load_and_turn_ms"])
        return {"load_and_turn_ms": min(runs), "runs_ms": runs}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--turn"]:
        print(json.dumps(one_turn(sys.argv[2])))
    else:
        print(run())
