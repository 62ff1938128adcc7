"""A map step over six documents in child processes: the first is killed mid-step.

``summarize_then_die`` runs a turn whose one parallel step maps ``summarize``
over six documents (``Send``). Documents 0-2 finish at once; 3-5 wait for
ever. Each start is logged (fsync'd) in ``starts.log``. When the save that
holds the third finished task returns, the process kills itself with
SIGKILL: three tasks are saved, three are running. ``resume`` continues the
dead run in a fresh process, where every document finishes. Started with
``spawn``, so both are importable from here.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import signal
from pathlib import Path
from typing import Annotated, Any

from tenxgraph.core.graph import Send, StateGraph
from tenxgraph.core.graph._command import PARALLEL
from tenxgraph.core.state import AgentState
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite
from tests.storage._run_workers import open_checkpointer

CONFIG = {"thread_id": "digest", "user_id": "ana"}
DOCUMENTS = 6
FAST = 3


class Digest(AgentState):
    summaries: Annotated[list[str], operator.add] = []


def digest_graph(checkpointer: Checkpointer, work: Path, *, hang: bool) -> Any:
    """plan -> Send("summarize", {"doc": n}) for six documents."""

    async def summarize(arg: dict[str, int]) -> dict[str, Any]:
        doc = arg["doc"]
        fd = os.open(work / "starts.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{doc}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        if hang and doc >= FAST:
            await asyncio.Event().wait()
        return {"summaries": [f"summary {doc}"]}

    graph = StateGraph(Digest)
    graph.add_node("plan", lambda state: None)
    graph.add_node("summarize", summarize)
    graph.set_entry_point("plan")
    graph.add_conditional_edges(
        "plan", lambda state: [Send("summarize", {"doc": n}) for n in range(DOCUMENTS)]
    )
    # the killed run's lease holds the thread until it expires: short, and the resume waits
    return graph.compile(checkpointer, lease_seconds=1, multitask_strategy="enqueue")


def summarize_then_die(spec: dict[str, Any], work: str) -> None:
    """Start the turn; SIGKILL this process once the third finished task is saved."""
    checkpointer = open_checkpointer(spec)
    save = checkpointer.asave

    async def die_after_three(key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        stamp = await save(key, write)
        if write.node == PARALLEL:
            meta = json.loads(write.values)["execution_meta"]
            if len(meta.get("task_writes", {})) == FAST:
                os.kill(os.getpid(), signal.SIGKILL)
        return stamp

    checkpointer.asave = die_after_three  # type: ignore[method-assign]
    app = digest_graph(checkpointer, Path(work), hang=True)
    asyncio.run(app.ainvoke({"messages": [("user", "digest")]}, CONFIG))


def resume(spec: dict[str, Any], work: str) -> None:
    """Continue the dead run: only the documents without a saved summary run."""
    checkpointer = open_checkpointer(spec)
    app = digest_graph(checkpointer, Path(work), hang=False)

    async def main() -> None:
        try:
            await app.ainvoke(None, CONFIG)
        finally:
            await checkpointer.aclose()

    asyncio.run(main())
