"""The JSON the API answers with: threads, states, checkpoints and interrupts.

The shapes are LangGraph server's (``langgraph_sdk.schema``: ``Thread``,
``ThreadState``, ``Checkpoint``, ``Interrupt``) filled from tenxgraph's
threads:

- ``values`` is the state as JSON with the context window under
  ``messages`` (in the format the request asks for, LangChain's by
  default: see ``_message_format``), the other declared fields as
  they are, and the runtime's bookkeeping (``execution_meta``) left out:
  it shows as ``status``, ``next``, ``tasks`` and ``interrupts``.
- A checkpoint id is the checkpoint's version as text (``"1"``, ``"2"``...);
  its namespace is ``""``. A paused subgraph has no checkpoint of its own: a
  task names its namespace (``research``), and shows its state when asked
  for subgraphs.
- A thread is ``busy`` while a run is pending or running on it (the run
  manager knows; a turn saved ``running`` by a run of another process counts
  too), ``interrupted`` while paused at an interrupt, ``error`` after a
  failed run, else ``idle``: LangGraph's meaning, on every backend.
- Times are ISO 8601 in UTC.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph import pending_remote_calls
from tenxgraph.core.state.remote_calls import REMOTE_CALLS_KIND
from tenxgraph.server._message_format import MessageEncoder, tenxgraph_json

if TYPE_CHECKING:
    from tenxgraph.core.graph import StateSnapshot, StateTree
    from tenxgraph.core.state.agent_state import AgentState
    from tenxgraph.storage import ThreadInfo

__all__ = [
    "checkpoint_json",
    "interrupt_id",
    "interrupts_json",
    "iso_time",
    "state_json",
    "state_metadata",
    "state_values",
    "subgraph_json",
    "thread_json",
    "thread_status",
]

_STATUS = {"running": "busy", "interrupted": "interrupted", "error": "error"}


def iso_time(timestamp: float) -> str:
    """A UNIX time as ISO 8601 in UTC."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def state_values(state: AgentState, encode: MessageEncoder = tenxgraph_json) -> dict[str, Any]:
    """The state as JSON: ``messages`` (the context window) and the other declared fields."""
    values = state.model_dump(mode="json", exclude={"context", "execution_meta"})
    return {"messages": [encode(m) for m in state.context], **values}


def thread_status(state: AgentState | None, busy: bool = False) -> str:
    """``idle``, ``busy``, ``interrupted`` or ``error`` (LangGraph's thread statuses).

    ``busy``: a run is pending or running on the thread, whatever its state says yet.
    """
    if busy:
        return "busy"
    if state is None:
        return "idle"
    return _STATUS.get(state.execution_meta.status, "idle")


def interrupt_id(thread_id: str, state: AgentState) -> str:
    """A stable id for the interrupt a thread is paused at (new for each pause)."""
    meta = state.execution_meta
    seed = f"{thread_id}\x00{meta.turn_start}\x00{meta.next_node}\x00{len(meta.resume_values)}"
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def interrupts_json(thread_id: str, state: AgentState) -> list[dict[str, Any]]:
    """The interrupt the thread is paused at, as a one-item list (empty when not paused).

    The runtime's pause for remote tool calls also has ``"kind": "remote_tool_calls"``:
    clients know it by that, not by its value, which a user's interrupt could copy.
    A pause saved as ``inside`` before that kind existed has it too, when the
    runtime recognises it (``pending_remote_calls`` lists its calls).
    """
    meta = state.execution_meta
    if meta.status != "interrupted":
        return []
    item: dict[str, Any] = {"value": meta.interrupt_value, "id": interrupt_id(thread_id, state)}
    if meta.interrupt_kind == REMOTE_CALLS_KIND or pending_remote_calls(state):
        item["kind"] = REMOTE_CALLS_KIND
    return [item]


def checkpoint_json(thread_id: str, version: int) -> dict[str, Any]:
    """A LangGraph ``Checkpoint`` naming version ``version`` of the thread."""
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": str(version),
        "checkpoint_map": None,
    }


def state_metadata(node: str, step: int, status: str) -> dict[str, Any]:
    """A checkpoint's ``metadata``: which node wrote it (``update`` for a state update)."""
    source = "update" if node == "update_state" else "loop"
    return {"source": source, "step": step, "node": node, "status": status}


def state_json(
    thread_id: str,
    snapshot: StateSnapshot[Any],
    encode: MessageEncoder = tenxgraph_json,
    tree: StateTree | None = None,
) -> dict[str, Any]:
    """A LangGraph ``ThreadState`` of one checkpoint.

    ``tree`` (``get_state(subgraphs=True)`` of it): each task's paused
    subgraph's state, under the task's ``state``.
    """
    state = snapshot.state
    meta = state.execution_meta
    interrupts = interrupts_json(thread_id, state)
    version, parent = snapshot.version, snapshot.parent_version
    return {
        "values": state_values(state, encode),
        "next": next_of(state),
        "tasks": _tasks_json(thread_id, state, tree, "", encode),
        "checkpoint": checkpoint_json(thread_id, version),
        "metadata": state_metadata(snapshot.node, snapshot.step, meta.status),
        "created_at": iso_time(snapshot.created_at),
        "parent_checkpoint": None if parent is None else checkpoint_json(thread_id, parent),
        "interrupts": interrupts,
    }


def _tasks_json(
    thread_id: str, state: AgentState, tree: StateTree | None, ns: str, encode: MessageEncoder
) -> list[dict[str, Any]]:
    """The tasks that run next; a task whose subgraph is paused names its namespace."""
    interrupts = interrupts_json(thread_id, state)
    paused = state.execution_meta.subgraphs
    tasks = []
    for node in next_of(state):
        task: dict[str, Any] = {
            "id": interrupt_id(thread_id, state),
            "name": node,
            "path": [],
            "error": None,
            "interrupts": interrupts,
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for segment, saved in paused.items():
            if saved.get("done") or segment.split(":", 1)[0].split("#", 1)[0] != node:
                continue
            namespace = f"{ns}|{segment}" if ns else segment
            task["checkpoint"] = {"thread_id": thread_id, "checkpoint_ns": namespace}
            child = None if tree is None else tree.subgraphs.get(segment)
            if child is not None:
                task["state"] = subgraph_json(thread_id, child, encode)
        tasks.append(task)
    return tasks


def subgraph_json(thread_id: str, tree: StateTree, encode: MessageEncoder) -> dict[str, Any]:
    """A paused subgraph's ``ThreadState``: it has no checkpoint of its own, only a namespace."""
    state = tree.state
    return {
        "values": state_values(state, encode),
        "next": next_of(state),
        "tasks": _tasks_json(thread_id, state, tree, tree.namespace, encode),
        "checkpoint": {
            "thread_id": thread_id,
            "checkpoint_ns": tree.namespace,
            "checkpoint_id": None,
            "checkpoint_map": None,
        },
        "metadata": {},
        "created_at": None,
        "parent_checkpoint": None,
        "interrupts": interrupts_json(thread_id, state),
    }


_GOING_ON = frozenset({"running", "interrupted", "error"})
"""Statuses of a checkpoint saved inside a turn: a node is still to run."""


def next_of(state: AgentState) -> list[str]:
    """The nodes that run next from this checkpoint (LangGraph's ``next``); [] at a turn's end.

    In a parallel step (``ExecMeta.tasks``), the nodes of its tasks that have
    not finished, each once, in merge order.
    """
    meta = state.execution_meta
    node = meta.next_node
    if meta.status not in _GOING_ON or node is None or node == "__end__":
        return []
    if meta.tasks:
        done = meta.task_writes
        pending = (t["node"] for i, t in enumerate(meta.tasks) if str(i) not in done)
        return list(dict.fromkeys(pending))
    return [node]


def thread_json(
    info: ThreadInfo,
    state: AgentState | None,
    busy: bool = False,
    encode: MessageEncoder = tenxgraph_json,
) -> dict[str, Any]:
    """A LangGraph ``Thread``: its metadata, times, status, values and interrupts."""
    thread_id = info.key.thread_id
    interrupts = [] if state is None else interrupts_json(thread_id, state)
    return {
        "thread_id": thread_id,
        "created_at": iso_time(info.created_at),
        "updated_at": iso_time(info.updated_at),
        "state_updated_at": iso_time(info.updated_at),  # every change of a thread is a save
        "metadata": info.metadata,
        "status": thread_status(state, busy),
        "values": {} if state is None else state_values(state, encode),
        "interrupts": {item["id"]: [item] for item in interrupts},
    }
