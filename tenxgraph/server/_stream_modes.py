"""The stream modes beyond values, updates and messages, each a translation of the typed events.

``RunStreamWriter`` hands every runtime event to a ``ModeWriter``, which
writes what these modes ask for, in the shapes of the JS SDK's
``types.stream`` and the Python SDK's ``schema``:

- ``custom``: ``custom``, the data a node or tool wrote (``get_stream_writer``).
- ``tasks``: ``tasks``, a task's start ``{"id", "name", "input", "triggers",
  "interrupts"}`` when its node's first event comes (the state it started
  from as ``input``), then its result ``{"id", "name", "result": [[field,
  value], ...], "interrupts"}``, or ``error`` instead of ``result``.
- ``checkpoints``: ``checkpoints``, each checkpoint the run saved:
  ``{"config", "parent_config", "values", "metadata", "next", "tasks"}``.
- ``debug``: ``debug``, ``{"type", "timestamp", "step", "payload"}`` wrapping
  each checkpoint (``checkpoint``), task start (``task``) and task result
  (``task_result``).
- ``events``: ``events``, LangChain's ``astream_events`` records (``event``,
  ``name``, ``run_id``, ``parent_ids``, ``tags``, ``metadata``, ``data``):
  ``on_chain_start``/``on_chain_end`` of the graph and of each node,
  ``on_chat_model_stream`` per chunk, ``on_chat_model_end`` per model answer,
  ``on_tool_start``/``on_tool_end`` per tool call.
- ``tools``: ``tools``, ``on_tool_start`` for each call a model makes,
  ``on_tool_end`` (or ``on_tool_error``) with its result.
- ``lifecycle``: ``lifecycle``, ``{"event": "started"|"completed"|"interrupted"|"failed",
  "namespace": []}`` for the run's graph (a subgraph's would name its namespace).

Messages are written as tenxgraph's JSON, like every logged event;
``_message_format`` translates them for each reader.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticSerializationError

from tenxgraph.core.graph import (
    CustomEvent,
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    StreamEvent,
    UpdateEvent,
)
from tenxgraph.server import _shapes as shapes

if TYPE_CHECKING:
    from tenxgraph.core.graph import StateSnapshot

__all__ = ["SNAPSHOT_MODES", "TRANSLATED_MODES", "ModeWriter"]

TRANSLATED_MODES = frozenset(
    {"custom", "tasks", "checkpoints", "debug", "events", "tools", "lifecycle"}
)
"""The modes a ``ModeWriter`` writes."""

SNAPSHOT_MODES = frozenset({"checkpoints", "debug"})
"""The modes that send each checkpoint the run saves, not only its state."""

Emit = Callable[[str, Any], None]


class ModeWriter:
    """One run's events in the translated modes it asked for."""

    def __init__(self, emit: Emit, modes: frozenset[str], run_id: str, thread_id: str) -> None:
        self.emit, self.run_id, self.thread_id = emit, run_id, thread_id
        self.modes = modes & TRANSLATED_MODES
        self.values: dict[str, Any] = {}
        """The state as last saved when the stream last looked: the input of the next task."""
        self._tasks: dict[str, str] = {}
        """The task id of each node started and not yet finished."""
        self._tool_names: dict[str, str] = {}
        self._step = 0

    def started(self, graph_id: str) -> None:
        """The run began."""
        if "lifecycle" in self.modes:
            self.emit("lifecycle", {"event": "started", "namespace": []})
        if "events" in self.modes:
            self._event("on_chain_start", graph_id, self.run_id, {"input": None})

    def ended(self, graph_id: str, status: str, output: Any) -> None:
        """The run ended with ``status`` (``success``, ``interrupted``, ``error``)."""
        if "events" in self.modes and status != "error":
            self._event("on_chain_end", graph_id, self.run_id, {"output": output})
        if "lifecycle" in self.modes:
            word = {"success": "completed", "interrupted": "interrupted"}.get(status, "failed")
            data: dict[str, Any] = {"event": word, "namespace": []}
            if word == "failed" and isinstance(output, dict) and "__error__" in output:
                data["error"] = output["__error__"]
            self.emit("lifecycle", data)

    def write(self, event: StreamEvent) -> None:
        """Write what ``event`` is in the translated modes."""
        if not self.modes:
            return
        if isinstance(event, CustomEvent):
            if "custom" in self.modes:
                self.custom(event.data)
        elif isinstance(event, MessageEvent):
            self._task_of(event.node)
            self._message(event)
        elif isinstance(event, UpdateEvent):
            self._step = event.step
            task = self._task_of(event.node)
            update = dict(event.values)
            if event.messages:
                update["messages"] = [m.model_dump(mode="json") for m in event.messages]
            self._task_end(event.node, task, {"result": list(update.items())})
            if "events" in self.modes:
                self._event("on_chain_end", event.node, task, {"output": update}, event.node)
        elif isinstance(event, ErrorEvent):
            self._task_end(event.node, self._task_of(event.node), {"error": event.error})
        elif isinstance(event, InterruptEvent) and event.when not in ("before", "after"):
            task = self._task_of(event.node)
            interrupts = [{"value": event.value, "id": task}]
            self._task_end(event.node, task, {"result": []}, interrupts)

    def custom(self, data: Any, name: str = "custom") -> None:
        """What a node wrote with its stream writer (``custom|ns`` from a subgraph)."""
        try:
            self.emit(name, data)
        except PydanticSerializationError:  # not JSON data: its text
            self.emit(name, str(data))

    def checkpoint_json(self, snapshot: StateSnapshot[Any]) -> dict[str, Any]:
        """A checkpoint the run saved as ``checkpoint`` writes it: made when it is saved."""
        state = shapes.state_json(self.thread_id, snapshot)
        parent = state["parent_checkpoint"]
        return {
            "config": {"configurable": state["checkpoint"]},
            "parent_config": None if parent is None else {"configurable": parent},
            "values": state["values"],
            "metadata": state["metadata"],
            "next": state["next"],
            "tasks": state["tasks"],
        }

    def checkpoint(self, step: int, data: dict[str, Any]) -> None:
        """A checkpoint the run saved at ``step`` (its ``checkpoint_json``)."""
        if "checkpoints" in self.modes:
            self.emit("checkpoints", data)
        self._debug("checkpoint", step, data)

    def _task_of(self, node: str) -> str:
        """The id of ``node``'s running task: a new one (and its start) at its first event."""
        task = self._tasks.get(node)
        if task is not None:
            return task
        task = self._tasks[node] = str(uuid.uuid4())
        start = {
            "id": task,
            "name": node,
            "input": self.values,
            "triggers": [f"branch:to:{node}"],
            "interrupts": [],
        }
        if "tasks" in self.modes:
            self.emit("tasks", start)
        self._debug("task", self._step + 1, start)
        if "events" in self.modes:
            self._event("on_chain_start", node, task, {"input": self.values}, node)
        return task

    def _task_end(
        self, node: str, task: str, outcome: dict[str, Any], interrupts: list[Any] | None = None
    ) -> None:
        self._tasks.pop(node, None)
        data = {"id": task, "name": node, **outcome, "interrupts": interrupts or []}
        if "tasks" in self.modes:
            self.emit("tasks", data)
        self._debug("task_result", self._step, data)

    def _debug(self, kind: str, step: int, payload: dict[str, Any]) -> None:
        if "debug" in self.modes:
            stamp = shapes.iso_time(time.time())
            self.emit("debug", {"type": kind, "timestamp": stamp, "step": step, "payload": payload})

    def _message(self, event: MessageEvent) -> None:
        message = event.message
        task = self._tasks[event.node]
        if "events" in self.modes and message.role == "assistant":
            kind = "on_chat_model_stream" if message.delta else "on_chat_model_end"
            key = "chunk" if message.delta else "output"
            data = {key: message.model_dump(mode="json")}
            self._event(kind, event.node, str(message.message_id), data, event.node, task)
        if message.delta or not {"tools", "events"} & self.modes:
            return
        for call in message.tool_calls():
            self._tool_names[call.id] = call.name
            self._tool(event.node, call.id, call.name, task, {"input": call.args})
        for result in message.tool_results():
            name = self._tool_names.pop(result.call_id, "")
            key = "error" if result.is_error else "output"
            self._tool(event.node, result.call_id, name, task, {key: result.output})

    def _tool(self, node: str, call_id: str, name: str, task: str, data: dict[str, Any]) -> None:
        """A tool call's start (``data`` has ``input``), end (``output``) or failure (``error``)."""
        key = next(iter(data))
        kind = {"input": "on_tool_start", "output": "on_tool_end"}.get(key, "on_tool_error")
        if "tools" in self.modes:
            self.emit("tools", {"event": kind, "toolCallId": call_id, "name": name, **data})
        if "events" in self.modes:
            payload = data if key == "input" else {"output": data[key]}
            event = "on_tool_start" if key == "input" else "on_tool_end"
            self._event(event, name, call_id, payload, node, task)

    def _event(
        self,
        kind: str,
        name: str,
        run_id: str,
        data: dict[str, Any],
        node: str | None = None,
        task: str | None = None,
    ) -> None:
        """One ``astream_events`` record: the graph's (no ``node``), a node's, or in ``task``."""
        parents = [] if node is None else [self.run_id] if task is None else [self.run_id, task]
        metadata: dict[str, Any] = {"run_id": self.run_id, "thread_id": self.thread_id}
        if node is not None:
            metadata.update(langgraph_step=self._step, langgraph_node=node)
        record = {"event": kind, "name": name, "run_id": run_id, "parent_ids": parents}
        self.emit("events", record | {"tags": [], "metadata": metadata, "data": data})
