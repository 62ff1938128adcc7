"""Merging what a node returns into the state, field by field through each field's reducer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from tenxgraph.core.graph._command import Command, Send
from tenxgraph.core.state.agent_state import RUNTIME_FIELDS, AgentState, Reducer, field_reducers
from tenxgraph.core.state.edits import RemoveMessage, ReplaceMessage, apply_edits
from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.core.state.message_input import as_message
from tenxgraph.core.state.reducers import add_messages
from tenxgraph.errors import StateError

__all__ = ["StateSchema", "TaskWrite", "Updates"]

_MESSAGE_ITEMS = (Message, RemoveMessage, ReplaceMessage)


class Updates:
    """Several updates from one node, merged in order (``where`` names each in errors)."""

    __slots__ = ("items",)

    def __init__(self, items: list[tuple[str, Any]]) -> None:
        self.items = items


class Applied:
    """What one update changed: messages added to context and other fields set."""

    __slots__ = ("messages", "values")

    def __init__(self, messages: list[Message] | None = None) -> None:
        self.messages: list[Message] = [] if messages is None else messages
        self.values: dict[str, Any] = {}


@dataclass(slots=True)
class TaskWrite:
    """What one task of a parallel step returned, kept apart until the whole step has finished.

    ``values`` are (field, validated value) pairs in the order returned;
    ``goto`` is its ``Command``'s (None without one). ``encode``/``decode``
    make the JSON form saved in ``ExecMeta.task_writes``.
    """

    messages: list[Message] = field(default_factory=list)
    values: list[tuple[str, Any]] = field(default_factory=list)
    goto: Any = None

    def encode(self, schema: StateSchema) -> dict[str, Any]:
        """The JSON form saved with the step."""
        data: dict[str, Any] = {}
        if self.messages:
            data["messages"] = MessagesAdapter.dump_python(self.messages, mode="json")
        if self.values:
            data["values"] = [[name, schema.dump_field(name, v)] for name, v in self.values]
        if self.goto is not None:
            data["goto"] = _encode_goto(self.goto)
        return data

    @classmethod
    def decode(cls, data: Mapping[str, Any], schema: StateSchema) -> TaskWrite:
        """The write ``encode`` saved."""
        messages = MessagesAdapter.validate_python(data.get("messages", []))
        values = [
            (name, schema.validate_field(name, value, "a saved task write"))
            for name, value in data.get("values", [])
        ]
        return cls(messages, values, _decode_goto(data.get("goto")))


def _encode_goto(goto: Any) -> Any:
    if isinstance(goto, Send):
        return {"send": goto.node, "arg": goto.arg}
    if isinstance(goto, str):
        return goto
    return [_encode_goto(item) for item in goto]


def _decode_goto(data: Any) -> Any:
    if isinstance(data, dict):
        return Send(data["send"], data.get("arg"))
    if isinstance(data, list):
        return [_decode_goto(item) for item in data]
    return data


class StateSchema:
    """The graph's state class, with its reducers and a validator per field, built once."""

    def __init__(self, state_class: type[AgentState]) -> None:
        self.state_class = state_class
        self.reducers: dict[str, Reducer] = field_reducers(state_class)
        self._validators: dict[str, TypeAdapter[Any]] = {}

    def validate_field(self, name: str, value: Any, where: str) -> Any:
        """Validate ``value`` for field ``name``; the error names ``where`` and the field."""
        adapter = self._validators.get(name)
        if adapter is None:
            info = self.state_class.model_fields[name]
            constraints = [m for m in info.metadata if not callable(m)]
            declared: Any = info.annotation  # typed loosely: pydantic allows None here
            annotation: Any = Annotated[declared, *constraints] if constraints else declared
            adapter = self._validators[name] = TypeAdapter(annotation)
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            raise StateError(f"{where}: invalid value for field {name!r}: {exc}") from None

    def dump_field(self, name: str, value: Any) -> Any:
        """``value`` of field ``name`` as JSON data (the inverse of ``validate_field``)."""
        self.validate_field(name, value, "")  # makes the field's adapter
        return self._validators[name].dump_python(value, mode="json")

    def write_of(self, state: AgentState, output: Any, where: str) -> TaskWrite:
        """What a parallel task's ``output`` would merge, checked, without touching ``state``.

        Any return a node may give is accepted, except message edits
        (``RemoveMessage``/``ReplaceMessage``): tasks of one step cannot edit
        messages another may be answering.
        """
        write = TaskWrite()
        if isinstance(output, Command):
            write.goto, output = output.goto, output.update
        self._collect(state, output, where, write)
        return write

    def _collect(self, state: AgentState, update: Any, where: str, write: TaskWrite) -> None:
        if update is None or update is state:
            return
        if isinstance(update, Message):
            write.messages.append(update)
        elif isinstance(update, list):
            write.messages.extend(_new_messages(update, where))
        elif isinstance(update, Updates):
            for label, item in update.items:
                self._collect(state, item, f"{where}, {label}", write)
        elif isinstance(update, dict):
            self._check_fields(update, where)
            for name, value in update.items():
                if name == "context":
                    items = value if isinstance(value, list) else [value]
                    write.messages.extend(_new_messages(items, f"{where}, 'context'"))
                else:
                    write.values.append((name, self.validate_field(name, value, where)))
        elif isinstance(update, BaseModel) and isinstance(update, self.state_class):
            changed = {
                name: getattr(update, name)
                for name in update.model_fields_set - {"execution_meta"}
                if getattr(update, name) != getattr(state, name)
            }
            self._collect(state, changed, where, write)
        else:
            raise _bad_return(update, where, self.state_class)

    def merge_writes(
        self, state: AgentState, writes: Sequence[tuple[str, TaskWrite]]
    ) -> list[Applied]:
        """Merge a finished step's writes in the order given (the step's merge order).

        Refused before anything changes when two tasks set a field that has
        no reducer to combine them: which should win is the graph's to say.
        """
        writers: dict[str, list[str]] = {}
        for node, write in writes:
            for name in dict.fromkeys(name for name, _ in write.values):
                writers.setdefault(name, []).append(node)
        for name, nodes in writers.items():
            if len(nodes) > 1 and name not in self.reducers:
                raise StateError(
                    f"field {name!r} was set by {len(nodes)} tasks of one parallel step "
                    f"({', '.join(map(repr, nodes))}) and has no reducer to combine them; give "
                    f"it one (Annotated[list[str], operator.add]) or set it from one task per step"
                )
        merged = []
        for node, write in writes:
            where = f"node {node!r}"
            applied = Applied(state.append_messages(write.messages) if write.messages else None)
            for name, value in write.values:
                self._apply_dict(state, {name: value}, where, applied)
            merged.append(applied)
        return merged

    def _check_fields(self, update: dict[str, Any], where: str) -> None:
        fields = self.state_class.model_fields
        unknown = sorted(set(update) - set(fields))
        if unknown:
            hint = "; messages go under 'context'" if "messages" in unknown else ""
            raise StateError(
                f"{where}: unknown state field(s) {', '.join(map(repr, unknown))} for "
                f"{self.state_class.__name__} (fields: {', '.join(fields)}){hint}"
            )
        if "execution_meta" in update:
            raise StateError(f"{where}: execution_meta belongs to the runtime; use state helpers")

    def apply_input(self, state: AgentState, values: Mapping[str, Any]) -> Applied:
        """Merge the ``state`` key of an invoke input; runtime-owned fields are refused."""
        owned = sorted(RUNTIME_FIELDS.intersection(values))
        if owned:
            raise StateError(
                f"invoke input 'state' cannot set {', '.join(owned)}: these fields belong to "
                "the runtime (send messages under 'messages')"
            )
        return self.apply(state, dict(values), "invoke input 'state'")

    def apply(
        self, state: AgentState, update: Any, where: str, removed: set[str | int] | None = None
    ) -> Applied:
        """Merge a node's return (messages, a dict, a state object, or None) into ``state``.

        ``removed`` collects the ids its message edits removed, shared by the
        parts of ``Updates`` (see ``apply_edits``).
        """
        if type(update) is list:  # the usual return, merged in one call when it can be
            added = state.merge_returned(update)
            if added is not None:
                return Applied(added)
        return self._apply_any(state, update, where, removed)

    def _apply_any(
        self, state: AgentState, update: Any, where: str, removed: set[str | int] | None
    ) -> Applied:
        """``apply`` for any update, the general way."""
        applied = Applied()
        # Taken before the merge: a merge rebuilds a stale index and would take them in unseen.
        direct = state.take_direct_additions()
        if update is None:
            pass
        elif isinstance(update, list):  # before Message: a miss on a model class is an ABC call
            applied.messages = _merge_list(state, update, where, removed)
        elif isinstance(update, Message):
            applied.messages = state.append_messages((update,))
        elif isinstance(update, Updates):
            removed = set() if removed is None else removed
            for label, item in update.items:
                part = self.apply(state, item, f"{where}, {label}", removed)
                applied.messages.extend(part.messages)
                applied.values.update(part.values)
        elif isinstance(update, dict):
            self._apply_dict(state, update, where, applied, removed)
        elif isinstance(update, self.state_class) and update is not state:
            self._apply_state_object(state, update, where, applied)
        elif update is not state:
            raise _bad_return(update, where, self.state_class)
        if direct:
            applied.messages[:0] = direct  # appended in place while the node ran: first
        return applied

    def _apply_dict(
        self,
        state: AgentState,
        update: dict[str, Any],
        where: str,
        applied: Applied,
        removed: set[str | int] | None = None,
    ) -> None:
        self._check_fields(update, where)
        for name, value in update.items():
            if name == "context":
                applied.messages.extend(self._merge_context(state, value, where, removed))
                continue
            value = self.validate_field(name, value, where)
            reducer = self.reducers.get(name)
            new = reducer(getattr(state, name), value) if reducer else value
            setattr(state, name, new)
            applied.values[name] = new

    def _apply_state_object(
        self, state: AgentState, other: AgentState, where: str, applied: Applied
    ) -> None:
        changed = {
            name: getattr(other, name)
            for name in other.model_fields_set - {"execution_meta"}
            if getattr(other, name) != getattr(state, name)
        }
        self._apply_dict(state, changed, where, applied)

    def _merge_context(
        self, state: AgentState, value: Any, where: str, removed: set[str | int] | None
    ) -> list[Message]:
        if not isinstance(value, list):
            value = [value] if isinstance(value, (Message, tuple, dict)) else value
        if not isinstance(value, list):
            raise StateError(
                f"{where}: 'context' must be a list of messages and edits, got "
                f"{type(value).__name__}"
            )
        messages = _message_items(value, f"{where}, 'context'")
        reducer = self.reducers.get("context", add_messages)
        if reducer is add_messages:
            if all(isinstance(m, Message) for m in messages):
                return state.append_messages(messages)
            return apply_edits(state, messages, removed)
        before = state.message_index()
        state.context = reducer(state.context, messages)
        return [m for m in state.context if m.message_id not in before]


def _new_messages(items: list[Any], where: str) -> list[Message]:
    """The messages of a parallel task's returned list; message edits are refused."""
    converted = _message_items(items, where)
    for item in converted:
        if not isinstance(item, Message):
            raise StateError(
                f"{where}: returned a {type(item).__name__}; message edits cannot be made in a "
                "parallel step (another task may be answering the message): return them from "
                "a node that runs alone"
            )
    return converted


def _merge_list(
    state: AgentState, update: list[Any], where: str, removed: set[str | int] | None
) -> list[Message]:
    """Merge a returned list of messages (and edits); return the messages added."""
    if all(isinstance(m, Message) for m in update):  # the common case, in one pass
        return state.append_messages(update)
    items = _message_items(update, where)
    if all(isinstance(m, Message) for m in items):
        return state.append_messages(items)
    return apply_edits(state, items, removed)


def _message_items(items: list[Any], where: str) -> list[Any]:
    """``items`` with message-like values (``("ai", "hi")``, role/content dicts) as Messages."""
    if all(isinstance(m, _MESSAGE_ITEMS) for m in items):
        return items
    return [
        m if isinstance(m, _MESSAGE_ITEMS) else as_message(m, f"{where}[{i}]")
        for i, m in enumerate(items)
    ]


def _bad_return(update: Any, where: str, state_class: type[AgentState]) -> StateError:
    """The error for a node's return that is no update."""
    if isinstance(update, BaseModel):
        return StateError(
            f"{where}: returned a {type(update).__name__}, "
            f"but the graph's state class is {state_class.__name__}"
        )
    return StateError(
        f"{where}: returned {type(update).__name__} {_preview(update)}; a node may return "
        "a Message, a list of Messages and edits, a dict of state fields, a state "
        "object, a Command, or None"
    )


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
