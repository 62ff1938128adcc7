"""W4: a fresh process loads a 10,000-message thread from SQLite and runs one turn.
Budget <= 120 ms (measured inside the fresh process, imports excluded).

Run: ``python -m bench.w4_resume``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadKey, ThreadWrite

MESSAGES = 10_000


def reply(state: AgentState) -> list[Message]:
    return [Message.text_message(f"reply {len(state.context)}", role="assistant")]


def build(path: str) -> Any:
    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph.compile(SqliteCheckpointer(path))


def seed(path: str) -> None:
    roles = ("user", "assistant")
    history = [
        Message.text_message(f"message {i} " * 4, role=roles[i % 2]) for i in range(MESSAGES)
    ]
    values = AgentState().model_dump(mode="json", exclude={"context"})
    write = ThreadWrite(0, history, values, [(0, MESSAGES)], node="seed", step=0)
    asyncio.run(SqliteCheckpointer(path).asave(ThreadKey("w4"), write))


def one_turn(path: str) -> dict[str, Any]:
    app = build(path)
    start = time.perf_counter()
    result = app.invoke({"messages": [Message.text_message("one more")]}, {"thread_id": "w4"})
    elapsed = time.perf_counter() - start
    assert len(result["state"].context) == MESSAGES + 2
    return {"load_and_turn_ms": round(elapsed * 1e3, 1)}


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w4.sqlite")
        seed(path)
        child = subprocess.run(
            [sys.executable, "-m", "bench.w4_resume", "--turn", path],
            capture_output=True,
            text=True,
            check=True,
        )
        return dict(json.loads(child.stdout))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--turn"]:
        print(json.dumps(one_turn(sys.argv[2])))
    else:
        print(run())
