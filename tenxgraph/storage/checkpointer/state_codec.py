"""State <-> stored JSON: the non-message fields go to the state row, messages to the log.

Loading always goes through the graph's declared state class (data only on
disk): stored rows never name a class to import.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_json

from tenxgraph.core.state.agent_state import AgentState, ExecMeta
from tenxgraph.core.state.app_state import AppState
from tenxgraph.core.state.json_policy import json_bytes
from tenxgraph.errors import CorruptRecordError, UnstorableStateError
from tenxgraph.storage.checkpointer._json_text import ValuesText

if TYPE_CHECKING:  # the contract's types; base imports this module to decode
    from tenxgraph.storage.checkpointer.base import StoredThread

__all__ = ["decode_state", "encode_row", "encode_values", "unstorable_fields", "values_text"]

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
        values = _plain_values(state)  # pragma: no mutate (None: the dump, the same data)
        if values is None:
            values = state.model_dump(mode="json", exclude=_APART)
        values["execution_meta"] = _meta_data(state.execution_meta)
        return values
    except PydanticSerializationError as exc:
        raise _unstorable(type(state).__name__, unstorable_fields(state), str(exc)) from None


def _unstorable(state_name: str, fields: list[str], why: str) -> UnstorableStateError:
    return UnstorableStateError(
        f"state field(s) {', '.join(map(repr, fields))} of {state_name} cannot "
        f"be stored: a stored value must be JSON data ({why})",
        fields,
    )


def _plain_values(state: AgentState) -> dict[str, Any] | None:
    """``encode_values``' dump of a plain ``AgentState``, made from its attributes, or None.

    Plain: nothing in ``app_state`` or ``structured_response``, as in most runs' states.
    The same data as pydantic's dump, in the same order, and nothing shared with the
    state (the app_state dict is new), at a fraction of a model dump's cost.
    """
    fields = state.__dict__
    # no mutate: a guard made always true sends a plain state to the dump, the same data
    app_state = fields["app_state"]  # pragma: no mutate
    if (
        type(state) is not AgentState  # pragma: no mutate
        or fields["structured_response"] is not None
        or type(app_state) is not AppState  # pragma: no mutate (a subclass dumps {} too)
        or app_state.root
        or type(fields["context_summary"]) not in _PLAIN_SCALARS  # set directly, unvalidated
    ):
        return None
    return {
        "context_summary": fields["context_summary"],
        "app_state": {},
        "structured_response": None,
    }


_META_SCALARS = tuple(
    (name, ExecMeta.model_fields[name].default)
    for name in ("error", "stop_requested", "next_node", "interrupt_kind")
)
"""``ExecMeta``'s plain fields after the four always written, with their defaults, in order."""

_META_ALWAYS = ("current_node", "step", "status", "turn_start")
"""``ExecMeta``'s fields every stored row names: tools read them from the raw row."""

_META_PLAIN = _META_ALWAYS + tuple(name for name, _ in _META_SCALARS)
"""The fields the short cut copies as they are, so each must hold a plain JSON scalar."""

_meta_plain = itemgetter(*_META_PLAIN)
"""The values of ``_META_PLAIN`` from an ``ExecMeta``'s ``__dict__``, in one C call."""

_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})
"""Types copied into a row as they are. Fields are not validated on assignment, so a
node may have put anything there; anything else (an object, a float that may be NaN)
goes through pydantic's dump, which names a field JSON cannot carry."""


def _meta_data(meta: ExecMeta) -> dict[str, Any]:
    """``execution_meta`` as stored: the four fields tools read, then those not at their default.

    Made from the attributes while the fields that hold JSON values (the interrupt's
    value, resume values, the tool ledger and starts, a parallel step's tasks,
    writes and joins, paused subgraphs) are empty, as they are on most
    steps: pydantic's ``exclude_defaults`` calls each default factory to compare.
    """
    fields = meta.__dict__
    data = {name: fields[name] for name in _META_ALWAYS}
    if (
        type(meta) is not ExecMeta  # pragma: no mutate (always true: the dump, the same data)
        or fields["interrupt_value"] is not None
        or fields["resume_values"]
        or fields["tool_ledger"]
        or fields["tool_starts"]
        or fields["tasks"]
        or fields["task_writes"]
        or fields["joins"]
        or fields["subgraphs"]
        or not _PLAIN_SCALARS.issuperset(map(type, _meta_plain(fields)))  # no generator
    ):
        # no mutate: a python-mode dump of these JSON values is written to the same text
        data.update(meta.model_dump(mode="json", exclude_defaults=True))  # pragma: no mutate
        return data
    for name, default in _META_SCALARS:
        value = fields[name]
        if value != default:
            data[name] = value
    return data


def values_text(values: dict[str, Any], state_name: str) -> ValuesText:
    """``values`` (JSON data, as ``encode_values`` makes it) as JSON text, in one Rust call.

    What a save hands the checkpointer (``ThreadWrite.values``), so no backend
    encodes it again. A value JSON cannot hold that ``encode_values`` lets
    through (NaN or an infinity in a ``float`` field, a lone surrogate or a
    NUL in a string) raises ``UnstorableStateError`` naming its fields, here, before
    anything is written: the run then fails cleanly as for any unstorable
    field, instead of the checkpointer refusing the whole save.
    """
    text, bad = json_bytes(values)
    if bad or text is None:
        raise _unstorable(state_name, bad, "NaN, infinity, a lone surrogate or a NUL character")
    return ValuesText(text, "utf-8")  # pragma: no mutate (one copy; "UTF-8" is the same codec)


def encode_row(state: AgentState) -> tuple[dict[str, Any] | None, ValuesText]:
    """``encode_values`` and ``values_text`` of ``state`` in one: the row's data and its text.

    What every save makes. A plain state is written by formatting its few
    scalars into the row's text, the same bytes as pydantic writes, for a
    fraction of its generic serializer's cost, and its data is None: the text
    holds it all (``json.loads(text)`` is ``encode_values(state)``), so a save
    that never needs the data does not build it. Any other state goes the
    general way.

    Plain: a plain ``AgentState`` (``_plain_values``) without a summary, and
    bookkeeping whose JSON-valued fields are empty, with no error, stop
    request or interrupt kind: a running or completed step's row. Each
    string is written as ``_name_json`` has it (node names and statuses: a
    graph's few); an int must be a plain ``int``.
    """
    fields = state.__dict__
    app_state, meta = fields["app_state"], fields["execution_meta"]
    if (
        type(state) is not AgentState
        or fields["context_summary"] is not None
        or fields["structured_response"] is not None
        or type(app_state) is not AppState
        or app_state.root
        or type(meta) is not ExecMeta
    ):
        return _dumped_row(state)
    m = meta.__dict__
    node, step, status, turn_start, error, stop, next_node, kind = _meta_plain(m)
    if (
        error is not None
        or stop is not False
        or kind is not None
        or type(step) is not int
        or type(turn_start) is not int
        or m["interrupt_value"] is not None
        or any(_json_valued(m))  # one C call for the truth of each (all empty: plain)
        or type(node) is not str  # an object, or a str subclass equal to a key below
        or type(status) is not str
        or (next_node is not None and type(next_node) is not str)
    ):
        return _dumped_row(state)
    parts = _row_parts.get((node, status, next_node))  # pragma: no mutate (a miss: made again)
    if parts is None:
        parts = _new_row_parts(node, status, next_node)
        if parts is None:
            return _dumped_row(state)
    head, middle, tail = parts
    return None, ValuesText(f"{head}{step}{middle}{turn_start}{tail}")


def _dumped_row(state: AgentState) -> tuple[dict[str, Any], ValuesText]:
    """``encode_row`` of a state that is not plain: pydantic's dump, then its text."""
    values = encode_values(state)
    return values, values_text(values, type(state).__name__)


_json_valued = itemgetter(
    "resume_values", "tool_ledger", "tool_starts", "tasks", "task_writes", "joins", "subgraphs"
)
"""``ExecMeta``'s JSON-valued fields but ``interrupt_value`` (None, not empty, when unset)."""

_row_parts: dict[tuple[str, str, str | None], tuple[str, str, str]] = {}
"""A plain row's text around its step and turn start, by (node, status, next node): a
graph's few combinations, each made once (``_new_row_parts``)."""


def _new_row_parts(node: str, status: str, next_node: str | None) -> tuple[str, str, str] | None:
    """The text of a plain row around its two ints, or None when a name must not be in one."""
    node_text, status_text = _name_json(node), _name_json(status)
    next_text = "" if next_node is None else _name_json(next_node)  # pragma: no mutate (or dump)
    if node_text is None or status_text is None or next_text is None:
        return None
    if next_node is not None:
        next_text = f',"next_node":{next_text}'
    parts = (
        '{"context_summary":null,"app_state":{},"structured_response":null,"execution_meta":'
        f'{{"current_node":{node_text},"step":',
        f',"status":{status_text},"turn_start":',
        f"{next_text}}}}}",
    )
    if len(_row_parts) < _MAX_ROWS:  # pragma: no mutate (a cache: one more entry or none)
        _row_parts[node, status, next_node] = parts  # pragma: no mutate (as above)
    return parts


_MAX_ROWS = 1_000
"""``_row_parts`` stops growing here: a graph has a few names, not thousands."""


def _name_json(name: object) -> str | None:
    """A plain ``str`` as pydantic writes it in JSON, or None when a row must not hold it.

    None for anything else (a str subclass, an object), a lone surrogate or a
    NUL (``json_bytes``' rule): the general path then refuses it, naming the field.
    """
    if type(name) is not str:
        return None
    try:
        text = to_json(name).decode()
    except PydanticSerializationError:
        return None
    return None if "\\u0000" in text else text


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
