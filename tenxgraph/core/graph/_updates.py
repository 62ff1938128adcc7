"""Merging what a node returns into the state, field by field through each field's reducer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from tenxgraph.core.state.agent_state import RUNTIME_FIELDS, AgentState, Reducer, field_reducers
from tenxgraph.core.state.edits import RemoveMessage, ReplaceMessage, apply_edits
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_input import as_message
from tenxgraph.core.state.reducers import add_messages
from tenxgraph.errors import StateError

__all__ = ["StateSchema", "Updates"]

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
        elif isinstance(update, BaseModel) and update is not state:
            if not isinstance(update, self.state_class):
                raise StateError(
                    f"{where}: returned a {type(update).__name__}, "
                    f"but the graph's state class is {self.state_class.__name__}"
                )
            self._apply_state_object(state, update, where, applied)
        elif update is not state:
            raise StateError(
                f"{where}: returned {type(update).__name__} {_preview(update)}; a node may return "
                "a Message, a list of Messages and edits, a dict of state fields, a state "
                "object, a Command, or None"
            )
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


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
