"""A run's graph events as the stream events of LangGraph's server API.

``RunStreamWriter.run`` drives ``graph.astream`` and appends to the run's
``EventLog`` the events its ``stream_mode`` asks for (names and data as
LangGraph's server sends them, so ``langgraph-sdk`` reads them):

- ``values``: the whole state after each step, as the run saved it (the
  runtime hands each save over, ``RunControl.on_save``: the thread is not
  read back) and the final state; a paused run's last ``values`` carries
  ``__interrupt__``.
- ``updates``: ``{node: {"messages": [...], field: value}}`` per step, and
  ``{"__interrupt__": [...]}`` when the run pauses.
- ``messages-tuple``: event ``messages``, data ``[message, metadata]``, for
  every streamed chunk (``delta: true``) and every complete message.
- ``messages``: ``messages/metadata`` once per message, then
  ``messages/partial`` with the message accumulated so far, and
  ``messages/complete`` with the complete message.
- ``custom``, ``tasks``, ``checkpoints``, ``debug``, ``events``, ``tools``,
  ``lifecycle``: written by a ``ModeWriter`` (``_stream_modes``) from the
  same events; ``checkpoints`` and ``debug`` send each checkpoint the run saved.

Every run's stream starts with ``metadata`` (``{"run_id", "attempt"}``),
may carry ``error`` (``{"error": type, "message": text}``) and ends with
``end``. Messages are logged as tenxgraph's own JSON (``Message.model_dump``:
``role``, typed ``content`` blocks, ``message_id``, ``delta``); each reader
gets them in the format it asked for (``_message_format.translate_event``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph import (
    CustomEvent,
    InterruptEvent,
    MessageEvent,
    RunControl,
    RunResult,
    StreamEvent,
    SubgraphEvent,
    UpdateEvent,
    pending_remote_calls,
)
from tenxgraph.core.state.json_policy import reader_json
from tenxgraph.errors import GraphRunError
from tenxgraph.runs import RunStatus
from tenxgraph.server import _shapes as shapes
from tenxgraph.server._stream_modes import SNAPSHOT_MODES, TRANSLATED_MODES, ModeWriter

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph, StateSnapshot
    from tenxgraph.core.state.agent_state import AgentState
    from tenxgraph.core.state.message import Message
    from tenxgraph.server._event_log import EventLog
    from tenxgraph.server.remote_tools import RemoteCalls

__all__ = [
    "STREAM_MODES",
    "RunStreamWriter",
    "StreamEncoder",
    "run_status",
]

STREAM_MODES = frozenset({"values", "updates", "messages", "messages-tuple"}) | TRANSLATED_MODES
"""The ``stream_mode`` values this server produces."""

_READS_STATE = frozenset({"values", "tasks", "debug", "events"}) | SNAPSHOT_MODES
"""The modes that need the state as saved after each step."""

ROOT_NAME = "LangGraph"
"""The run's graph as the ``events`` mode names it (LangGraph's name for a graph's own run)."""


@dataclass(frozen=True, slots=True)
class StreamEncoder:
    """How state and messages become JSON on the stream (the thread endpoints' shapes)."""

    values: Callable[[AgentState], dict[str, Any]] = shapes.state_values
    """A state as the ``values`` of ``GET /threads/{id}/state``."""

    @staticmethod
    def message(message: Message) -> dict[str, Any]:
        """A message as the thread endpoints return it."""
        return message.model_dump(mode="json")

    @staticmethod
    def message_json(message: Message) -> str:
        """``message`` as JSON text: ``message``'s JSON in one pass."""
        return message.model_dump_json()

    @staticmethod
    def dumps(data: Any) -> str:
        """JSON text of ``data`` (pydantic's encoder; NaN as null, see ``json_policy``)."""
        return reader_json(data)


def run_status(result: RunResult) -> RunStatus:
    """The LangGraph run status of a run that ended with ``result``."""
    status = result.state.execution_meta.status
    return "success" if status == "completed" else "interrupted"


@dataclass(slots=True)
class _Partial:
    """A message being streamed, for ``messages/partial``: its first chunk and text so far."""

    first: dict[str, Any]
    text: list[str] = field(default_factory=list)


class RunStreamWriter:
    """Runs the graph and writes the events the stream modes ask for into the run's log."""

    def __init__(
        self,
        log: EventLog,
        encoder: StreamEncoder,
        modes: tuple[str, ...],
        run_id: str,
        remote: RemoteCalls | None = None,
        *,
        subgraphs: bool = False,
    ) -> None:
        self.log, self.encoder, self.run_id, self.remote = log, encoder, run_id, remote
        self.modes = frozenset(modes)
        self.subgraphs = subgraphs
        """``stream_subgraphs``: the subgraphs' updates and messages, their namespace in
        the event's name (``updates|research``, ``messages-tuple|research|search``)."""
        self.output: Any = None
        """The final values (with ``__interrupt__`` when paused), or ``{"__error__": ...}``."""
        self._last_values: str | None = None
        self._partial: _Partial | None = None
        self._pause: InterruptEvent | None = None
        self._sub_state: AgentState | None = None
        """The subgraph state last sent as ``values|<namespace>``."""
        self._config: Mapping[str, Any] = {}
        self._tuple_meta: dict[str, str] = {}
        """Per node: the JSON of the metadata its ``messages-tuple`` events carry."""
        self._reads = bool(self.modes & _READS_STATE)
        self._snapshots = bool(self.modes & SNAPSHOT_MODES)
        self._started = False
        """The leg's first event came (and with it the leg's first ``values``)."""
        self._saved: StateSnapshot[Any] | None = None
        """The leg's last save (``_on_save``), None before its first."""
        self._saved_values: dict[str, Any] | None = None
        """That save's state as ``values``, once encoded."""
        self._checkpoints: list[tuple[int, dict[str, Any]]] = []
        """The checkpoints saved and not sent yet: (step, ``checkpoint_json``), oldest first."""
        self.translated = ModeWriter(self._emit, self.modes, run_id, "")

    def _emit(self, event: str, data: Any) -> None:
        self.log.append(event, self.encoder.dumps(data))

    async def run(
        self,
        graph: CompiledGraph[Any],
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any],
        invocation_state: dict[str, Any] | None = None,
        control: RunControl | None = None,
    ) -> RunStatus:
        """Run to the end and return its status; a failure is logged as ``error``, then raised.

        A pause for remote (browser-side) tools does not end the run: their
        calls are streamed as ``remote_tool_call`` events, and the run goes
        on with the results the client posts, or at the first deadline.
        ``control`` is the run's handle (``RunRegistry`` stops the run through
        it); a run it stopped before the graph took the thread, or while the
        run paused for remote tools, ends ``interrupted``.
        """
        self._config = config
        self.translated.thread_id = str(config.get("thread_id", ""))
        if control is None:
            control = RunControl(self.run_id, None)
        control.on_save = self._on_save if self._reads else None
        self.translated.started(ROOT_NAME)
        try:
            status = await self._legs(graph, input, config, invocation_state, control)
        except Exception as exc:
            self.failed(exc)
            raise
        self.translated.ended(ROOT_NAME, status, self.output)
        return status

    async def _legs(
        self,
        graph: CompiledGraph[Any],
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any],
        invocation_state: dict[str, Any] | None,
        control: RunControl | None,
    ) -> RunStatus:
        """The run's ``astream`` legs: one, and one more after each remote tools' pause."""
        while True:
            result = await self._leg(graph, input, config, invocation_state, control)
            if result is None:
                return "interrupted"
            pending = pending_remote_calls(result.state)
            if not pending or self.remote is None:
                return run_status(result)
            if control is not None and control.stop_requested:
                return "interrupted"
            for entry in self.remote.expect(pending):
                self._emit("remote_tool_call", entry.call.model_dump(mode="json"))
            input = await self.remote.next_resume()

    async def _leg(
        self,
        graph: CompiledGraph[Any],
        input: Mapping[str, Any] | None,
        config: Mapping[str, Any],
        invocation_state: dict[str, Any] | None,
        control: RunControl | None,
    ) -> RunResult | None:
        """One ``astream`` of the graph, into the log; its result (None: stopped before it ran)."""
        seen_first, result = False, None
        self._pause = None
        self._started, self._saved, self._saved_values = False, None, None
        self._checkpoints.clear()
        stream = graph.astream(
            input,
            config,
            invocation_state=invocation_state,
            control=control,
            subgraphs=self.subgraphs,
        )
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                if not seen_first:
                    seen_first = True
                    if self._reads and not isinstance(event, RunResult):
                        await self._values_from(graph)
                    self._started = True
                await self._write(graph, event)
                if isinstance(event, RunResult):
                    result = event
        if result is None and not (control is not None and control.stop_requested):
            raise GraphRunError("the run ended without a result")
        return result

    async def _write(self, graph: CompiledGraph[Any], event: StreamEvent) -> None:
        modes = self.modes
        if not isinstance(event, RunResult):
            self.translated.write(event)
        if isinstance(event, MessageEvent):
            self._message(event)
        elif isinstance(event, UpdateEvent):
            if "updates" in modes:
                update = dict(event.values)
                if event.messages:
                    update["messages"] = [self.encoder.message(m) for m in event.messages]
                self._emit("updates", {event.node: update})
            if self._reads:
                await self._values_from(graph)
        elif isinstance(event, InterruptEvent):
            self._pause = event  # sent with the result, which has the state its id needs
        elif isinstance(event, RunResult):
            self._result(event)
            if self._snapshots:  # the run's last checkpoint
                await self._values_from(graph, send=False)
        elif isinstance(event, SubgraphEvent):
            self._subgraph(event)

    def _subgraph(self, event: SubgraphEvent) -> None:
        """A subgraph's event, its namespace in the event's name (``values|research``).

        Updates, values, messages (``messages-tuple``) and custom data.

        Its ``values`` come from the event (the state after the step), sent
        once per step: a subgraph's steps are not saved, so they cannot be read back.
        """
        namespace = "|".join(event.namespace)
        inner = event.event
        if isinstance(inner, UpdateEvent):
            if "updates" in self.modes:
                update = dict(inner.values)
                if inner.messages:
                    update["messages"] = [self.encoder.message(m) for m in inner.messages]
                self._emit(f"updates|{namespace}", {inner.node: update})
            state = event.state
            if "values" in self.modes and state is not None and state is not self._sub_state:
                self._sub_state = state  # a parallel step's tasks share their step's state
                self._emit(f"values|{namespace}", self.encoder.values(state))
        elif isinstance(inner, MessageEvent) and "messages-tuple" in self.modes:
            meta = {"langgraph_node": inner.node, "langgraph_checkpoint_ns": namespace}
            meta["run_id"] = self.run_id
            text = self.encoder.message_json(inner.message)
            self.log.append(f"messages|{namespace}", f"[{text},{self.encoder.dumps(meta)}]")
        elif isinstance(inner, CustomEvent) and "custom" in self.modes:
            self.translated.custom(inner.data, f"custom|{namespace}")

    def _message(self, event: MessageEvent) -> None:
        if "messages-tuple" in self.modes:
            meta = self._tuple_meta.get(event.node)
            if meta is None:  # the same for every message of the node in this run
                data = {"langgraph_node": event.node, "run_id": self.run_id}
                data["thread_id"] = str(self._config.get("thread_id", ""))
                meta = self._tuple_meta[event.node] = self.encoder.dumps(data)
            text = self.encoder.message_json(event.message)
            self.log.append("messages", f"[{text},{meta}]")
        if "messages" not in self.modes:
            return
        message = self.encoder.message(event.message)
        if event.message.delta:
            if self._partial is None:
                self._partial = _Partial(message)
                key = str(message.get("message_id", ""))
                self._emit("messages/metadata", {key: {"metadata": {"langgraph_node": event.node}}})
            self._partial.text.append(event.message.text())
            partial = {
                **self._partial.first,
                "content": [{"type": "text", "text": "".join(self._partial.text)}],
            }
            self._emit("messages/partial", [partial])
            return
        if self._partial is None:
            key = str(message.get("message_id", ""))
            self._emit("messages/metadata", {key: {"metadata": {"langgraph_node": event.node}}})
        self._partial = None
        self._emit("messages/complete", [message])

    def _on_save(self, saved: StateSnapshot[Any]) -> None:
        """The run saved its thread: keep what the stream sends of that checkpoint.

        ``saved.state`` is the run's own object. Until the leg's first event
        it is encoded at once: that event may come from inside the next node,
        after the node changed it. After that the stream sends ``values`` only
        at a step's ``UpdateEvent``, which comes right after the step's save,
        so it is encoded then (once for a parallel step's saves and events).
        A checkpoint is made at once: every one is sent, each with its own state.
        """
        self._saved, self._saved_values = saved, None
        if self._snapshots:
            self._checkpoints.append((saved.step, self.translated.checkpoint_json(saved)))
        if self._snapshots or not self._started:
            self._saved_values = self.encoder.values(saved.state)

    async def _values_from(self, graph: CompiledGraph[Any], *, send: bool = True) -> None:
        """Send the checkpoints saved since the last call, then ``values``: the state as saved.

        ``values`` is not sent again unchanged; ``send=False`` sends the
        checkpoints only (the final values went already). A leg that saved
        nothing yet (a resumed run) reads the thread: its state is as stored.
        """
        for step, data in self._checkpoints:
            self.translated.checkpoint(step, data)
        self._checkpoints.clear()
        if not send:
            return
        values = self._saved_values
        if values is None and self._saved is not None:
            values = self._saved_values = self.encoder.values(self._saved.state)
        elif values is None:
            state = await graph.aget_state(self._config)
            if state is None:
                return
            values = self.encoder.values(state)
        self.translated.values = values
        if "values" in self.modes:
            self._send_values(values)

    def _send_values(self, values: dict[str, Any]) -> None:
        text = self.encoder.dumps(values)
        if text != self._last_values:
            self._last_values = text
            self.log.append("values", text)

    def _result(self, result: RunResult) -> None:
        values = self.encoder.values(result.state)
        if result.interrupt is not None:
            thread_id = str(self._config.get("thread_id", ""))
            interrupts = shapes.interrupts_json(thread_id, result.state)
            pause = self._pause or result.interrupt
            for item in interrupts:
                item.update(node=pause.node, when=pause.when)
            if "updates" in self.modes:
                self._emit("updates", {"__interrupt__": interrupts})
            values["__interrupt__"] = interrupts
        self.output = values
        if "values" in self.modes:
            self._send_values(values)

    def failed(self, error: BaseException) -> None:
        """Log the run's failure as an ``error`` event (and as its output)."""
        detail = {"error": type(error).__name__, "message": str(error)}
        self.output = {"__error__": detail}
        self._emit("error", detail)
        self.translated.ended(ROOT_NAME, "error", self.output)

    def cancelled(self, reason: str) -> None:
        """The run's task was cancelled before the graph ran it, or while it waited for a browser.

        ``join`` and ``wait`` then answer ``{"__error__": {"error": "RunCancelled"}}``;
        the stream just ends.
        """
        if self.output is None:
            self.output = {"__error__": {"error": "RunCancelled", "message": reason}}

    def end(self) -> None:
        """The last event of every run's stream, then the log closes."""
        if not self.log.closed:
            self._emit("end", None)
            self.log.close()
