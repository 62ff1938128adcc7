"""A three-agent swarm run in child processes, killed with SIGKILL in the middle of a handoff.

``triage`` hands over to ``orders``, which looks the order up (``lookup``
writes a line to ``lookups.log`` each time it runs) and then hands over to
``billing``. ``run_then_die`` kills its own process at ``spec["kill_at"]``:

- ``"handoff"``: at the save right after ``transfer_to_billing`` returned,
  before the step that records its result and the new active agent is done;
- ``"next_agent"``: when ``billing``'s model is first called, after the
  handoff was saved.

``resume`` continues the dead run in a fresh process with ``invoke(None)``.
The models answer from the conversation, so both processes build the same
graph. Started with ``spawn``, so both are importable from here.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from typing import Any

from tenxgraph.core.graph import create_agent, create_swarm
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.llm.testing import ModelReply
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite
from tests.storage._run_workers import open_checkpointer

CONFIG = {"thread_id": "support", "user_id": "ana"}
ANSWER = "Order 42 shipped; billing has nothing due."


def _has_result(request: ModelRequest, call_id: str) -> bool:
    return any(r.call_id == call_id for m in request.messages for r in m.tool_results())


def swarm(checkpointer: Checkpointer, work: Path, kill_at: str | None) -> CompiledGraph[Any]:
    """triage -> orders (lookup) -> billing, each handoff a ``transfer_to_*`` call."""

    def lookup(order: str) -> str:
        """Look an order up."""
        with (work / "lookups.log").open("a") as log:
            log.write(f"{order}\n")
        return f"order {order}: shipped"

    def triage(request: ModelRequest) -> ModelReply:
        return ToolCallBlock(id="h1", name="transfer_to_orders", args={})

    def orders(request: ModelRequest) -> ModelReply:
        if not _has_result(request, "l1"):
            return ToolCallBlock(id="l1", name="lookup", args={"order": "42"})
        return ToolCallBlock(id="h2", name="transfer_to_billing", args={})

    def billing(request: ModelRequest) -> ModelReply:
        if kill_at == "next_agent":
            os.kill(os.getpid(), signal.SIGKILL)
        return ANSWER

    members = [
        create_agent(FunctionModel(triage), name="triage", system_prompt="Route the customer."),
        create_agent(FunctionModel(orders), [lookup], name="orders"),
        create_agent(FunctionModel(billing), name="billing"),
    ]
    # the killed run's lease holds the thread until it expires: short, and the resume waits
    return create_swarm(
        members, checkpointer=checkpointer, lease_seconds=1, multitask_strategy="enqueue"
    )


def run_then_die(spec: dict[str, Any], work: str) -> None:
    """Start the turn; SIGKILL this process at ``spec["kill_at"]``."""
    checkpointer = open_checkpointer(spec)
    handed_over = threading.Event()
    if spec["kill_at"] == "handoff":
        save = checkpointer.asave

        async def die_after_handoff(key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
            if handed_over.is_set():
                os.kill(os.getpid(), signal.SIGKILL)
            return await save(key, write)

        checkpointer.asave = die_after_handoff  # type: ignore[method-assign]
    app = swarm(checkpointer, Path(work), spec["kill_at"])
    transfer = app.nodes["orders.tools"].tools["transfer_to_billing"]  # type: ignore[attr-defined]
    inner = transfer.function

    def noting(*args: Any, **kwargs: Any) -> Any:
        result = inner(*args, **kwargs)
        handed_over.set()
        return result

    transfer.function = noting
    message = Message.text_message("Where is order 42, and do I owe anything?")
    asyncio.run(app.ainvoke({"messages": [message]}, CONFIG))


def resume(spec: dict[str, Any], work: str) -> None:
    """Continue the dead run in a fresh process."""
    checkpointer = open_checkpointer(spec)
    app = swarm(checkpointer, Path(work), None)

    async def main() -> None:
        try:
            await app.ainvoke(None, CONFIG)
        finally:
            await checkpointer.aclose()

    asyncio.run(main())
