"""Reading LangChain message dicts as tenxgraph messages (``from_langchain_message``).

The shapes of LangChain's messages (types, default keys, which keys each
type has) live here too, for ``langchain_format``, which writes them; see
that module for what goes where.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from tenxgraph.core.state._langchain_blocks import KEY, block_from_langchain, describe
from tenxgraph.core.state.edits import RemoveMessage
from tenxgraph.core.state.message import Message, Role, TokenUsages
from tenxgraph.core.state.message_block import (
    ContentBlock,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.errors import StateError

__all__ = ["LANGCHAIN_KEY", "LANGCHAIN_TYPES", "from_langchain_message", "is_langchain_message"]

LANGCHAIN_KEY = "langchain"
"""``Message.metadata[LANGCHAIN_KEY]``: the parts of a LangChain message tenxgraph has no
field for, written back in their place."""

_TYPE_OF_ROLE: dict[Role, str] = {
    "user": "human",
    "assistant": "ai",
    "system": "system",
    "tool": "tool",
}
_ROLE_OF_TYPE: dict[str, Role] = {kind: role for role, kind in _TYPE_OF_ROLE.items()}
_CHUNK_OF_TYPE = {kind: f"{kind.capitalize()}MessageChunk" for kind in _ROLE_OF_TYPE}
_CHUNK_OF_TYPE["ai"] = "AIMessageChunk"
_TYPE_OF_CHUNK = {chunk: kind for kind, chunk in _CHUNK_OF_TYPE.items()}
LANGCHAIN_TYPES = frozenset({*_ROLE_OF_TYPE, *_TYPE_OF_CHUNK, "remove"})
"""The ``type`` values of LangChain messages this module reads."""

_DEFAULTS: dict[str, Any] = {"additional_kwargs": {}, "response_metadata": {}, "name": None}
"""Keys every LangChain message has, at their defaults (``model_dump()`` writes them)."""
_AI_DEFAULTS: dict[str, Any] = {"invalid_tool_calls": [], "usage_metadata": None}
_CHUNK_DEFAULTS: dict[str, Any] = {"chunk_position": None}
_TOOL_DEFAULTS: dict[str, Any] = {"artifact": None}
_BASE_KEYS = frozenset({"type", "id", "content", *_DEFAULTS})
_READ: dict[Role, frozenset[str]] = {
    "user": _BASE_KEYS,
    "system": _BASE_KEYS,
    "assistant": _BASE_KEYS | {"tool_calls", "tool_call_chunks", *_AI_DEFAULTS, *_CHUNK_DEFAULTS},
    "tool": _BASE_KEYS | {"tool_call_id", "status", *_TOOL_DEFAULTS},
}
"""The keys of a LangChain message read for each role; other keys are kept as they are."""
_CHUNK_KEYS = frozenset({"name", "args", "id", "index", "type"})
_ALL_DEFAULTS = {**_DEFAULTS, **_AI_DEFAULTS, **_CHUNK_DEFAULTS, **_TOOL_DEFAULTS}
_MESSAGE_FIELDS = ("tools_calls", "reasoning", "raw", "parsed_content")
"""``Message`` fields LangChain has no place for, kept as they are when set."""


def is_langchain_message(value: Any) -> bool:
    """True for a dict in LangChain's form: a known ``type``, and no ``role`` (tenxgraph's)."""
    return (
        isinstance(value, Mapping)
        and "role" not in value
        and isinstance(value.get("type"), str)
        and value["type"] in LANGCHAIN_TYPES
    )


def _usage_metadata(usages: TokenUsages | Mapping[str, Any]) -> dict[str, Any]:
    """LangChain's ``usage_metadata`` of a ``TokenUsages``, or of its fields as a dict.

    A stored message's JSON passes its dict: no model is built only to read six numbers.
    """
    fields = usages.__dict__ if isinstance(usages, TokenUsages) else usages
    out: dict[str, Any] = {
        "input_tokens": fields["prompt_tokens"],
        "output_tokens": fields["completion_tokens"],
        "total_tokens": fields["total_tokens"],
    }
    inputs = {
        "cache_creation": fields["cache_creation_input_tokens"],
        "cache_read": fields["cache_read_input_tokens"],
    }
    inputs = {k: v for k, v in inputs.items() if v}
    if inputs:
        out["input_token_details"] = inputs
    if fields["reasoning_tokens"]:
        out["output_token_details"] = {"reasoning": fields["reasoning_tokens"]}
    return out


def _usages(usage: Mapping[str, Any]) -> TokenUsages:
    inputs = usage.get("input_token_details") or {}
    outputs = usage.get("output_token_details") or {}
    return TokenUsages(
        prompt_tokens=usage["input_tokens"],
        completion_tokens=usage["output_tokens"],
        total_tokens=usage["total_tokens"],
        cache_creation_input_tokens=inputs.get("cache_creation", 0),
        cache_read_input_tokens=inputs.get("cache_read", 0),
        reasoning_tokens=outputs.get("reasoning", 0),
    )


def from_langchain_message(data: Any, where: str = "message") -> Message | RemoveMessage:
    """A LangChain message dict as a tenxgraph ``Message`` (``RemoveMessage`` for ``remove``).

    Takes the dict ``to_langchain_message`` writes, LangChain's
    ``model_dump()`` of a message, and ``message_to_dict``'s
    ``{"type", "data"}``. Anything else raises ``StateError`` saying what
    was wrong and where (``where`` names the message, e.g. ``input
    'messages'[2]``).
    """
    if (
        isinstance(data, Mapping)
        and set(data) == {"type", "data"}
        and isinstance(data["data"], Mapping)
    ):
        data = {**data["data"], "type": data["type"]}  # message_to_dict's form
    if not is_langchain_message(data):
        raise StateError(
            f"{where}: not a LangChain message: expected a dict whose 'type' is one of "
            f"{', '.join(sorted(LANGCHAIN_TYPES))}, got {describe(data)}"
        )
    kind = data["type"]
    if kind == "remove":
        if not isinstance(data.get("id"), str | int) or data.get("id") == "":
            raise StateError(f"{where}: a 'remove' message needs the 'id' of the message to remove")
        return RemoveMessage(data["id"])
    delta = kind in _TYPE_OF_CHUNK
    role = _ROLE_OF_TYPE[_TYPE_OF_CHUNK.get(kind, kind)]
    own = _own(data, where)
    read = _READ[role]
    kept = {k: v for k, v in data.items() if k not in read or not _default(k, v)}
    for key in ("type", "id", "content", "tool_calls", "tool_call_id", "status", "usage_metadata"):
        if key in read:
            kept.pop(key, None)
    if "additional_kwargs" in kept:
        kept["additional_kwargs"] = _foreign_kwargs(data["additional_kwargs"], where)
        if not kept["additional_kwargs"]:
            del kept["additional_kwargs"]
    fields = _fields(data, role, own, kept, where)
    fields["delta"] = delta
    if delta and "timestamp" not in own:
        fields["timestamp"] = None  # a chunk carries no time (see _message_own)
    try:
        return Message.model_validate(fields)
    except ValidationError as exc:
        raise StateError(f"{where}: not a valid message: {exc}") from None


def _fields(
    data: Mapping[str, Any], role: Role, own: dict[str, Any], kept: dict[str, Any], where: str
) -> dict[str, Any]:
    blocks, forms = _blocks(data.get("content"), where)
    if role == "tool":
        blocks = _tool_result(data, blocks, own, where)
    elif role == "assistant":
        blocks = _with_calls(data, blocks, own, kept, where)
    if any(forms.values()):
        kept["content"] = {str(i): form for i, form in forms.items() if form}
    fields: dict[str, Any] = {"role": role, "content": blocks}
    if "message_id" in own:
        fields["message_id"] = own["message_id"]
    elif data.get("id") is not None:
        fields["message_id"] = data["id"]
    for name in ("timestamp", *_MESSAGE_FIELDS):
        if name in own:
            fields[name] = own[name]
    metadata = dict(own.get("metadata", {}))
    if kept:
        metadata[LANGCHAIN_KEY] = kept
    fields["metadata"] = metadata
    fields["usages"] = _read_usages(data, role, own, kept, where)
    return fields


def _own(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    kwargs = data.get("additional_kwargs")
    own = kwargs.get(KEY) if isinstance(kwargs, Mapping) else None
    if own is None:
        return {}
    if not isinstance(own, Mapping):
        raise StateError(f"{where}: additional_kwargs[{KEY!r}] must be a dict, got {describe(own)}")
    return dict(own)


def _foreign_kwargs(kwargs: Any, where: str) -> dict[str, Any]:
    if not isinstance(kwargs, Mapping):
        raise StateError(f"{where}: 'additional_kwargs' must be a dict, got {describe(kwargs)}")
    return {k: v for k, v in kwargs.items() if k != KEY}


def _default(key: str, value: Any) -> bool:
    default = _ALL_DEFAULTS.get(key, ...)
    return value == default and type(value) is type(default)


def _blocks(content: Any, where: str) -> tuple[list[ContentBlock], dict[int, dict[str, Any]]]:
    if content is None or content == "":
        return [], {}
    if isinstance(content, str):
        return [TextBlock(text=content)], {}
    if not isinstance(content, list):
        raise StateError(
            f"{where}: 'content' must be a text or a list of content blocks, got "
            f"{describe(content)}"
        )
    blocks, forms = [], {}
    for index, item in enumerate(content):
        block, forms[index] = block_from_langchain(item, f"{where}.content[{index}]")
        blocks.append(block)
    return blocks, forms


def _with_calls(
    data: Mapping[str, Any],
    blocks: list[ContentBlock],
    own: dict[str, Any],
    kept: dict[str, Any],
    where: str,
) -> list[ContentBlock]:
    """The AI message's blocks with its tool calls put where they stood."""
    chunks = data.get("tool_call_chunks")
    if chunks:
        calls = _calls_from_chunks(chunks, kept, where)
    else:
        calls = _list(data.get("tool_calls"), "tool_calls", where)
        kept.pop("tool_call_chunks", None)
    notes = own.get("tool_calls") or [{}] * len(calls)
    if not isinstance(notes, list) or len(notes) != len(calls):
        raise StateError(f"{where}: additional_kwargs[{KEY!r}]['tool_calls'] does not fit")
    result, others = list(blocks), len(blocks)
    for j, (call, note) in enumerate(zip(calls, notes, strict=True)):
        here = f"{where}.tool_calls[{j}]"
        block = _call_block(call, note if isinstance(note, Mapping) else {}, here)
        at = note.get("at", others + j) if isinstance(note, Mapping) else others + j
        if type(at) is not int or not 0 <= at <= len(result):
            raise StateError(f"{here}: additional_kwargs[{KEY!r}] places it at {at!r}")
        result.insert(at, block)
    return result


def _calls_from_chunks(chunks: Any, kept: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """Complete tool calls of a chunk's ``tool_call_chunks`` (arguments as JSON text).

    Chunks that are not whole calls (partial arguments, no id or name) are
    kept as they are in ``metadata["langchain"]``, and so are all of them when
    any carries more than tenxgraph reads.
    """
    calls = []
    exact = True
    for j, chunk in enumerate(_list(chunks, "tool_call_chunks", where)):
        try:
            args = json.loads(chunk.get("args") or "{}")
        except ValueError:
            args = None
        whole = isinstance(args, dict) and chunk.get("id") and chunk.get("name") is not None
        if whole:
            calls.append({"name": chunk["name"], "args": args, "id": chunk["id"]})
        exact = exact and bool(whole) and chunk.get("index", j) == j
        exact = exact and not set(chunk) - _CHUNK_KEYS and json.dumps(args) == chunk.get("args")
    if exact:
        kept.pop("tool_call_chunks", None)
    return calls


def _list(value: Any, name: str, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise StateError(f"{where}: {name!r} must be a list of dicts, got {describe(value)}")
    return value


def _call_block(
    call: Mapping[str, Any], note: Mapping[str, Any], where: str
) -> ToolCallBlock | RemoteToolCallBlock:
    fields = {"id": call.get("id"), "name": call.get("name"), "args": call.get("args", {})}
    try:
        if note.get("remote"):
            return RemoteToolCallBlock.model_validate(fields)
        return ToolCallBlock.model_validate({**fields, "tool_type": note.get("tool_type")})
    except ValidationError as exc:
        raise StateError(f"{where}: not a valid tool call (id, name, args): {exc}") from None


def _tool_result(
    data: Mapping[str, Any], blocks: list[ContentBlock], own: dict[str, Any], where: str
) -> list[ContentBlock]:
    if own.get("content") == "blocks":
        return blocks
    call_id = data.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise StateError(f"{where}: a tool message needs 'tool_call_id', the call it answers")
    status = data.get("status", "success")
    if status not in ("success", "error"):
        raise StateError(
            f"{where}: a tool message's status is 'success' or 'error', not {status!r}"
        )
    output: Any
    if "output_json" in own:
        output = own["output_json"]
    elif own.get("output_media") and blocks:
        output = getattr(blocks[0], "media", None)
    elif isinstance(data.get("content"), list):
        output = blocks
    else:
        output = data.get("content") or ""
    is_error = status == "error"
    result = {"call_id": call_id, "output": output, "is_error": is_error}
    result["status"] = own.get("status", "failed" if is_error else "completed")
    try:
        return [ToolResultBlock.model_validate(result)]
    except ValidationError as exc:
        raise StateError(f"{where}: not a valid tool result: {exc}") from None


def _read_usages(
    data: Mapping[str, Any], role: Role, own: dict[str, Any], kept: dict[str, Any], where: str
) -> Any:
    if "usages" in own:
        return own["usages"]
    usage = data.get("usage_metadata")
    if usage is None or role != "assistant":
        return None
    try:
        usages = _usages(usage)
    except (KeyError, TypeError, AttributeError, ValidationError):
        raise StateError(
            f"{where}: 'usage_metadata' needs input_tokens, output_tokens and total_tokens"
        ) from None
    if _usage_metadata(usages) != usage:
        kept["usage_metadata"] = usage  # details tenxgraph has no field for
    return usages
