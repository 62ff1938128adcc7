"""``AgentState``: the conversation plus the runtime's bookkeeping, as one pydantic model."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue

from tenxgraph.core.state.app_state import AppState, app_state_from, empty_app_state
from tenxgraph.core.state.json_policy import storable_text
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.reducers import MessageIndex, add_messages
from tenxgraph.errors import GraphBuildError
from tenxgraph.utils.constants import START

__all__ = ["RUNTIME_FIELDS", "AgentState", "ExecMeta", "ExecStatus", "Reducer", "field_reducers"]

ExecStatus = Literal["idle", "running", "interrupted", "completed", "error", "stopped"]

Reducer = Callable[[Any, Any], Any]

RUNTIME_FIELDS = frozenset({"context", "context_summary", "execution_meta", "structured_response"})
"""Fields owned by the runtime; the ``state`` key of an invoke input cannot set them."""


class ExecMeta(BaseModel):
    """Where a run is and how it is doing. Owned by the runtime."""

    current_node: str = START
    """The node running now, or the last one that ran."""
    step: int = 0
    """Number of node executions in the current run."""
    status: ExecStatus = "idle"
    """Lifecycle of the thread's latest run."""
    error: str | None = None
    """The error message when ``status == "error"``."""
    stop_requested: bool = False
    """Set by a stop request; the run stops at the next node boundary."""
    next_node: str | None = None
    """Where a paused run continues."""
    interrupt_value: JsonValue = None
    """What the pausing ``interrupt(...)`` call asked the human."""
    interrupt_kind: Literal["before", "after", "inside", "remote_tool_calls"] | None = None
    """Whether the run paused before a node, after it, or inside it (``interrupt()``);
    ``remote_tool_calls`` inside a ``ToolNode``, for the client's remote tool results."""
    resume_values: list[JsonValue] = Field(default_factory=list)
    """Answers given so far to the interrupts of the paused node, in call order."""
    tool_ledger: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Results of tool calls that finished while their step was still running, by call id,
    so a crash or an interrupt in a sibling call never runs a finished tool twice."""
    tool_starts: dict[str, int] = Field(default_factory=dict)
    """How many times each pending tool call was started, by call id, saved before it runs:
    a call whose runs all died is not started again past the ToolNode's ``max_starts``."""
    turn_start: int = 0
    """The thread's version before its latest turn began; ``rollback`` returns to it."""
    tasks: list[dict[str, Any]] = Field(default_factory=list)
    """The tasks of the parallel step the run is in or goes to (``next_node`` is
    ``__parallel__``), in merge order: ``{"node": name}`` for an edge's target, with
    ``"arg"`` for a ``Send``, and ``"paused": true`` on the one an ``interrupt`` paused."""
    task_writes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """What each finished task of that step returned, by its index in ``tasks``, saved as
    it finishes and merged into the state when the whole step has: a crash, a failure
    or a stop re-runs only the tasks missing here."""
    joins: dict[str, list[str]] = Field(default_factory=dict)
    """For each join (``add_edge([a, b], c)``) waiting for more sources: those finished."""
    subgraphs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The paused subgraph runs of the node that paused, by namespace segment (the node's
    name, ``name:task`` in a parallel step): each one's state, kept until it finishes."""

    def enter_node(self, name: str) -> None:
        """Record that node ``name`` runs now, one more step: the run loop's write per step.

        Written straight into the model's fields: runtime assignments are not
        validated anyway, and two pydantic ``__setattr__`` calls per step were a
        measurable part of a short one.
        """
        fields = self.__dict__
        fields["current_node"] = name
        fields["step"] += 1

    def set_status(self, status: ExecStatus) -> None:
        """Set ``status``, as the run loop does at a run's start and end, written straight in."""
        self.__dict__["status"] = status

    def set_next_node(self, name: str | None) -> None:
        """Set ``next_node``, as the run loop does before each save, written straight in."""
        self.__dict__["next_node"] = name

    def clear_pause(self) -> None:
        """Clear ``next_node`` and ``interrupt_value`` at a run's end, written straight in."""
        fields = self.__dict__
        fields["next_node"] = fields["interrupt_value"] = None


_set = object.__setattr__
_META_DEFAULTS = ExecMeta().__dict__
"""A validated ``ExecMeta()``'s fields: the immutable defaults every new one starts from."""
_META_FACTORIES = [
    (name, info.default_factory)
    for name, info in ExecMeta.model_fields.items()
    if info.default_factory is not None
]
"""The fields made fresh for each one (lists and dicts, never shared)."""


def fresh_exec_meta() -> ExecMeta:
    """``ExecMeta()``, as every new ``AgentState`` gets it, built without validation.

    The object pydantic builds (same fields, no fields set, no extra or
    private data), from the defaults validated once at import, with fresh
    lists and dicts from each field's default factory: a third cheaper than
    ``ExecMeta()``, for every fresh state.
    """
    meta = object.__new__(ExecMeta)
    fields = _META_DEFAULTS.copy()
    for name, factory in _META_FACTORIES:
        fields[name] = factory()  # type: ignore[call-arg]
    _set(meta, "__dict__", fields)
    _set(meta, "__pydantic_fields_set__", set())
    _set(meta, "__pydantic_extra__", None)
    _set(meta, "__pydantic_private__", None)
    return meta


class AgentState(BaseModel):
    """The default graph state: the context window, its summary, and run metadata."""

    context: Annotated[list[Message], add_messages] = Field(default_factory=list)
    """The messages the model sees on its next call, oldest first."""
    context_summary: str | None = None
    """A condensed record of messages summarized out of ``context``."""
    execution_meta: ExecMeta = Field(default_factory=fresh_exec_meta)
    """Runtime bookkeeping; use the helper methods rather than editing it."""
    app_state: AppState = Field(default_factory=empty_app_state)
    """JSON key-value data of the thread (Strands' agent state); never sent to the model."""
    structured_response: Any = None
    """The last ``output_schema`` answer of an Agent (LangChain's structured_response); set by the
    runtime, not by invoke input. Stored as JSON: after a reload it is a dict."""

    def model_post_init(self, context: Any, /) -> None:
        """Make room for the message index, built on first use.

        The index lives in pydantic's private dict, as a ``PrivateAttr`` would,
        but is set up here in one step: pydantic's generic setup of private
        attributes cost as much as the rest of ``AgentState()``. A subclass's
        own private attributes are set up by pydantic before this runs.
        """
        private = self.__pydantic_private__
        if private is None:
            object.__setattr__(self, "__pydantic_private__", {"_index": None})
        else:
            private.setdefault("_index", None)

    def __setattr__(self, name: str, value: Any) -> None:
        # Assignments are not validated (that would cost every runtime write), but a dict
        # assigned to app_state is user data entering the state: it is checked and copied
        # here, so a later save never meets a value it cannot store.
        if name == "app_state":
            value = app_state_from(value)
        super().__setattr__(name, value)

    def message_index(self) -> MessageIndex:
        """The index of ``context`` (ids, system positions), rebuilt only when stale."""
        private = self.__pydantic_private__  # direct dict access: this runs on every merge
        index: MessageIndex | None = private.get("_index") if private else None
        if index is None or not index.covers(self.context):
            index = MessageIndex(self.context)
            self._keep_index(index)
        return index

    def set_context(self, context: list[Message], index: MessageIndex | None = None) -> None:
        """Replace ``context``, with an index already built for exactly that list."""
        self.context = context
        self._keep_index(index)

    def _keep_index(self, index: MessageIndex | None) -> None:
        private = self.__pydantic_private__
        if private is None:  # a subclass's model_post_init did not call this class's
            object.__setattr__(self, "__pydantic_private__", {"_index": index})
        else:
            private["_index"] = index

    def append_messages(self, messages: Sequence[Message]) -> list[Message]:
        """Merge ``messages`` into ``context`` in place by add_messages' rules; return those added.

        Costs O(len(messages)), not O(len(context)): this is how the runtime merges.
        """
        return self.message_index().extend(self.context, messages)

    def merge_returned(self, items: list[Any]) -> list[Message] | None:
        """``append_messages`` for a list a node returned, in one call; None to merge it in full.

        The run loop's usual merge. None, changing nothing, when an item is
        not a ``Message`` (edits, message-like values) or ``context`` was
        changed behind its index (direct edits, a new list): the general
        merge (``StateSchema.apply``) handles those.
        """
        private = self.__pydantic_private__
        index: MessageIndex | None = private.get("_index") if private else None
        if index is None:  # never indexed, so nothing to tell direct edits by: index it now
            index = self.message_index()
        return index.extend_covered(self.context, items)

    def take_direct_additions(self) -> list[Message]:
        """Messages put into ``context`` by direct list edits since the last merge.

        The runtime calls this after each node, so messages a node appended
        with ``state.context.append(...)`` are stored and streamed like returned ones.
        """
        private = self.__pydantic_private__
        index: MessageIndex | None = private.get("_index") if private else None
        if index is None or index.covers(self.context):
            return []
        self._keep_index(None)
        return index.direct_additions(self.context)

    def is_running(self) -> bool:
        """True while a run is in progress."""
        return self.execution_meta.status == "running"

    def is_interrupted(self) -> bool:
        """True while the thread is paused at an interrupt."""
        return self.execution_meta.status == "interrupted"

    def is_stopped_requested(self) -> bool:
        """True when a stop was requested for the current run."""
        return self.execution_meta.stop_requested

    def advance_step(self) -> None:
        """Count one more node execution."""
        self.execution_meta.step += 1

    def set_current_node(self, name: str) -> None:
        """Record the node that is running."""
        self.execution_meta.current_node = name

    def complete(self) -> None:
        """Mark the run completed."""
        self.execution_meta.status = "completed"
        self.execution_meta.next_node = None

    def error(self, message: str) -> None:
        """Mark the run failed with ``message``.

        NUL characters and lone surrogates in ``message`` (an exception's text
        can hold anything) become U+FFFD, so every store can record the failure.
        """
        self.execution_meta.status = "error"
        self.execution_meta.error = storable_text(message)


def field_reducers(state_class: type[BaseModel]) -> dict[str, Reducer]:
    """Map each field that declares a reducer to it; check each takes two arguments."""
    reducers: dict[str, Reducer] = {}
    for name, info in state_class.model_fields.items():
        for meta in info.metadata:
            if callable(meta) and not isinstance(meta, type):
                _check_arity(state_class, name, meta)
                reducers[name] = meta
    return reducers


def _check_arity(state_class: type[BaseModel], name: str, reducer: Reducer) -> None:
    try:
        params = inspect.signature(reducer).parameters.values()
    except (TypeError, ValueError):
        return
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    if len(positional) != 2 and not (variadic and len(positional) < 2):
        raise GraphBuildError(
            f"{state_class.__name__}.{name}: reducer {getattr(reducer, '__name__', reducer)!r} "
            f"must take exactly two arguments (current value, update), "
            f"it takes {len(positional)}"
        )
