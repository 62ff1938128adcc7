"""State <-> stored JSON: the non-message fields go to the state row, messages to the log.

Loading always goes through the graph's declared state class (data only on
disk): stored rows never name a class to import.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.errors import CorruptRecordError, UnstorableStateError
from tenxgraph.storage.checkpointer._json_text import ValuesText
from tenxgraph.storage.checkpointer.base import StoredThread

__all__ = ["decode_state", "encode_values", "unstorable_fields", "values_text"]

S = TypeVar("S", bound=AgentState)


def encode_values(state: AgentState) -> dict[str, Any]:
    """The state's non-message fields as JSON-ready data; ``execution_meta`` in short.

    ``execution_meta`` (the runtime's bookkeeping, stored with every
    checkpoint) leaves out the fields at their defaults, except the run's
    ``current_node``, ``step``, ``status`` and ``turn_start``, which tools read
    from the raw row: a typical state row falls from about 310 bytes to 160.
    Loading fills the defaults back in, so the state comes back equal, and
    rows written with every field (before) load the same. The other fields
    are written whole: they are the application's, and a thread may be read
    by a state class whose defaults differ.

    A field holding something JSON cannot carry (an object a node put in an
    ``Any`` field, say) raises ``UnstorableStateError`` naming every such
    field, instead of pydantic's error naming only a type.
    """
    try:
        values = state.model_dump(mode="json", exclude=_APART)
        meta = state.execution_meta
        values["execution_meta"] = {
            "current_node": meta.current_node,
            "step": meta.step,
            "status": meta.status,
            "turn_start": meta.turn_start,
            **meta.model_dump(mode="json", exclude_defaults=True),
        }
        return values
    except PydanticSerializationError as exc:
        fields = unstorable_fields(state)
        raise UnstorableStateError(
            f"state field(s) {', '.join(map(repr, fields))} of {type(state).__name__} cannot "
            f"be stored: a stored value must be JSON data ({exc})",
            fields,
        ) from None


def values_text(values: dict[str, Any]) -> dict[str, Any] | ValuesText:
    """``values`` (JSON data, as ``encode_values`` makes it) as JSON text, in one Rust call.

    What a save hands the checkpointer (``ThreadWrite.values``), so no backend
    encodes it again. Values JSON cannot hold (NaN, infinity, a lone
    surrogate) come back unchanged, as a dict: the checkpointer then refuses
    them with the same ``StateError`` as before.
    """
    try:
        text = to_json(values, inf_nan_mode="constants")
    except PydanticSerializationError:
        return values
    if b"NaN" in text or b"Infinity" in text:  # maybe a number JSON has no word for
        return values
    return ValuesText(text.decode())


_APART: Any = {"context", "execution_meta"}
"""Fields ``encode_values`` does not dump with the others: messages go to the log."""


def unstorable_fields(state: AgentState) -> list[str]:
    """The non-message fields of ``state`` whose value does not serialize to JSON."""
    bad = []
    for name in type(state).model_fields:
        if name == "context":
            continue
        try:
            state.model_dump(mode="json", include={name})
        except PydanticSerializationError:
            bad.append(name)
    return bad


def decode_state(state_class: type[S], stored: StoredThread) -> S:
    """Rebuild a state from a stored thread; a bad row raises ``CorruptRecordError``."""
    try:
        state = state_class.model_validate({**stored.values, "context": stored.context})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise CorruptRecordError(
            f"thread {stored.key.thread_id!r} (user {stored.key.user_id!r}): stored state "
            f"does not fit {state_class.__name__}: field {where!r}: {error['msg']}"
        ) from None
    state.message_index()
    return state
