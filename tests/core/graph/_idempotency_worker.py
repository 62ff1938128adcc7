"""A payment tool run in child processes: the first is killed before the tool's result is saved.

``charge_then_die`` runs a turn whose one tool call (``charge``) records its
idempotency key in ``keys.log`` and returns; the process then kills itself
with SIGKILL at the next save, the one that would have stored the result. So
the kill lands exactly in the window that re-runs a tool. ``resume``
continues the dead run in a fresh process, which starts the call again.
Started with ``spawn``, so both are importable from here.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from typing import Any

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite
from tests.storage._run_workers import open_checkpointer

CONFIG = {"thread_id": "payment", "user_id": "ana"}
CALL_ID = "pay-1"


def charge_graph(checkpointer: Checkpointer, work: Path, returned: threading.Event) -> Any:
    """plan -> tools -> done: ``plan`` asks for one charge, ``done`` answers."""

    def plan(state: AgentState) -> Message:
        call = ToolCallBlock(id=CALL_ID, name="charge", args={"amount": 100})
        return Message(role="assistant", content=[call])

    def charge(amount: int, idempotency_key: str) -> str:
        """Charge the customer (the key is what a payments API would be sent)."""
        fd = os.open(work / "keys.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{idempotency_key}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        returned.set()
        return f"charged {amount}"

    def done(state: AgentState) -> Message:
        return Message.text_message("paid", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("plan", plan)
    graph.add_node("tools", ToolNode([charge]))
    graph.add_node("done", done)
    graph.set_entry_point("plan")
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "done")
    # the killed run's lease holds the thread until it expires: short, and the resume waits
    app: CompiledGraph[Any] = graph.compile(
        checkpointer, lease_seconds=1, multitask_strategy="enqueue"
    )
    return app


def charge_then_die(spec: dict[str, Any], work: str) -> None:
    """Start the turn; SIGKILL this process at the first save after ``charge`` returned."""
    checkpointer = open_checkpointer(spec)
    returned = threading.Event()
    save = checkpointer.asave

    async def die_once_returned(key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        if returned.is_set():
            os.kill(os.getpid(), signal.SIGKILL)
        return await save(key, write)

    checkpointer.asave = die_once_returned  # type: ignore[method-assign]
    app = charge_graph(checkpointer, Path(work), returned)
    asyncio.run(app.ainvoke({"messages": [Message.text_message("pay 100")]}, CONFIG))


def resume(spec: dict[str, Any], work: str) -> None:
    """Continue the dead run: the call starts again, and this time its result is saved."""
    checkpointer = open_checkpointer(spec)
    app = charge_graph(checkpointer, Path(work), threading.Event())

    async def main() -> None:
        try:
            await app.ainvoke(None, CONFIG)
        finally:
            await checkpointer.aclose()

    asyncio.run(main())
