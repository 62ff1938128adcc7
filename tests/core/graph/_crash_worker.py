"""A graph run in a child process that the crash test kills with SIGKILL."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.storage.checkpointer import SqliteCheckpointer

WORK = Path(sys.argv[1])


def plan(state: AgentState) -> Message:
    if os.environ.get("DIE") == "1":
        return Message(role="assistant", content=[ToolCallBlock(id="d", name="die")])
    return Message(
        role="assistant",
        content=[ToolCallBlock(id="q", name="quick"), ToolCallBlock(id="s", name="slow")],
    )


def quick() -> str:
    """Finishes at once; its side effect must happen exactly once."""
    with open(WORK / "quick.log", "a") as log:
        log.write("ran\n")
    return "quick done"


def slow() -> str:
    """Hangs while the HANG variable is set (the parent kills the process meanwhile)."""
    while os.environ.get("HANG") == "1":
        time.sleep(0.05)
    return "slow done"


def die() -> str:
    """Kills its own process, as a tool that crashes the interpreter would."""
    with open(WORK / "die.log", "a") as log:
        log.write("started\n")
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


def answer(state: AgentState) -> Message:
    return Message.text_message("all done", role="assistant")


def build() -> object:
    graph = StateGraph(AgentState)
    graph.add_node("plan", plan)
    graph.add_node("tools", ToolNode([quick, slow, die]))
    graph.add_node("answer", answer)
    graph.set_entry_point("plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "answer")
    # the killed run's lease blocks the thread until it expires: short, and the resume waits
    return graph.compile(
        SqliteCheckpointer(WORK / "crash.sqlite"), lease_seconds=1, multitask_strategy="enqueue"
    )


if __name__ == "__main__":
    app = build()
    payload = {"messages": [Message.text_message("go")]} if sys.argv[2] == "start" else None
    result = app.invoke(payload, {"thread_id": "crash"})  # type: ignore[attr-defined]
    print(result["state"].execution_meta.status, [m.text() for m in result["messages"]])
