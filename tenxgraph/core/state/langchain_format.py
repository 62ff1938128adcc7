"""LangChain's message format: a tenxgraph ``Message`` as a LangChain message dict, and back.

The official LangGraph clients (``langgraph-sdk``, ``@langchain/langgraph-sdk``
and its ``useStream``, Agent Chat UI) read and send messages as LangChain
serializes them: ``type`` (``human``, ``ai``, ``system``, ``tool``; a
streamed piece is ``AIMessageChunk``), ``id``, ``content`` (a text, or a list
of standard content blocks), ``tool_calls``, ``tool_call_id``, ``status``,
``usage_metadata``, ``name``, ``additional_kwargs``, ``response_metadata``.
These pure functions translate; the server uses them at its LangGraph edge.

``to_langchain_message(message)`` gives a dict ``langchain_core`` loads
(``messages_from_dict([{"type": d["type"], "data": d}])`` or
``convert_to_messages([d])``). ``from_langchain_message(d)`` reads one back,
or a dict LangChain made (``message.model_dump()``, ``message_to_dict``),
and ``RemoveMessage`` dicts (``type: "remove"``) as tenxgraph's
``RemoveMessage`` edit.

**Nothing is lost, either way.** What LangChain's format has a place for
goes there: roles as types, text as ``content``, media and reasoning as
standard content blocks (see ``_langchain_blocks``), tool calls as
``tool_calls`` (a delta's as ``tool_call_chunks``, arguments as JSON text),
a tool result as a tool message's ``content``, ``tool_call_id`` and
``status`` (``error`` when ``is_error``), usage as ``usage_metadata``. The
rest of a tenxgraph message travels under ``additional_kwargs["tenxgraph"]``
(``timestamp``, ``metadata``, ``raw``, ``parsed_content``, an ``int`` id,
where tool calls stood among the blocks, which were remote, a tool's JSON
output, usage fields LangChain has no name for), so converting back gives an
equal message (a streamed piece's ``timestamp`` excepted: LangChain adds the
chunks of a message together and refuses two times for one key, so a chunk
carries none and reads back with ``None``). The other way, what tenxgraph
has no field for (``name``, ``response_metadata``, other ``additional_kwargs``, ``artifact``,
``invalid_tool_calls``, a block's ``id`` or a client's keys in it) is kept in
the message's ``metadata["langchain"]`` and written back in its place.

What is normalized, not kept as sent: text items of a content list come back
as text blocks, ``image_url`` blocks and ``data:`` URLs as standard blocks
with ``base64``, a content ``[]`` as ``""``, and a message without an ``id``
gets one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from pydantic import ValidationError
from pydantic_core import to_json

from tenxgraph.core.state._langchain_blocks import (
    KEY,
    block_from_langchain,
    block_to_langchain,
    describe,
)
from tenxgraph.core.state.edits import RemoveMessage
from tenxgraph.core.state.message import Message, Role, TokenUsages, _block_for
from tenxgraph.core.state.message_block import (
    ContentBlock,
    MediaRef,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.errors import StateError

__all__ = [
    "LANGCHAIN_KEY",
    "LANGCHAIN_TYPES",
    "TENXGRAPH_KEY",
    "from_langchain_message",
    "is_langchain_message",
    "langchain_from_json",
    "to_langchain_message",
]

TENXGRAPH_KEY = KEY
"""``additional_kwargs[TENXGRAPH_KEY]``: the parts of a tenxgraph message LangChain has no
field for (and a content block's ``extras[TENXGRAPH_KEY]``)."""
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
_NONE_KEYS = ("name", "usage_metadata", "chunk_position", "artifact")
"""Keys whose LangChain default is None: left out at that default."""
_CHUNK_KEYS = frozenset({"name", "args", "id", "index", "type"})
_ALL_DEFAULTS = {**_DEFAULTS, **_AI_DEFAULTS, **_CHUNK_DEFAULTS, **_TOOL_DEFAULTS}
_PLAIN_KEYS = frozenset(Message.model_fields)
_TEXT_KEYS = frozenset({"type", "text", "annotations"})
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


# --- tenxgraph -> LangChain ----------------------------------------------------------------


def to_langchain_message(message: Message) -> dict[str, Any]:
    """``message`` as a LangChain message dict (a delta as a ``...MessageChunk``).

    Keys at their LangChain defaults are written too, as ``model_dump()``
    writes them, so a client finds every field it expects; but those whose
    default is None (``name``, ``usage_metadata``, ``artifact``,
    ``chunk_position``) are left out then: the JS SDK types them as optional
    strings and objects, which ``null`` is not.
    """
    kept = message.metadata.get(LANGCHAIN_KEY)
    if isinstance(kept, dict) and kept:
        out = _to_langchain(message, kept)
        try:
            back = from_langchain_message(out)
        except StateError:
            back = None
        if back == message:  # what was kept fits back where it came from
            return out
    return _to_langchain(message, None)


def langchain_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """``to_langchain_message`` of a message given as its JSON (``model_dump(mode="json")``).

    For what a stream or a stored answer already holds as JSON. A message of
    plain text blocks with the other fields at their defaults (most streamed
    chunks and chat turns) is written from the JSON directly, the same dict
    the general path makes; any other is validated as a ``Message`` first.
    """
    plain = _plain_langchain(data)
    if plain is not None:
        return plain
    return to_langchain_message(Message.model_validate_json(to_json(data)))


def _plain_langchain(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """``to_langchain_message``'s dict for the JSON of a plain text message, else None."""
    if not _PLAIN_KEYS.issuperset(data) or "timestamp" not in data:
        return None
    if any(data.get(name) is not None for name in (*_MESSAGE_FIELDS, "usages")):
        return None
    role, message_id, delta = data.get("role"), data.get("message_id"), data.get("delta", False)
    metadata = data.get("metadata", {})
    if (
        role not in ("user", "assistant", "system")
        or type(message_id) not in (str, int)
        or type(delta) is not bool
        or type(metadata) is not dict
        or LANGCHAIN_KEY in metadata
    ):
        return None
    texts = _plain_texts(data.get("content"))
    if texts is None:
        return None
    own: dict[str, Any] = {"message_id": message_id} if type(message_id) is int else {}
    if not delta:
        own["timestamp"] = data["timestamp"]
    if metadata:
        own["metadata"] = metadata
    kind = _TYPE_OF_ROLE[role]
    out: dict[str, Any] = {
        "content": texts[0] if len(texts) == 1 and texts[0] else _text_list(texts),
        "additional_kwargs": {KEY: own} if own else {},
        "response_metadata": {},
        "type": _CHUNK_OF_TYPE[kind] if delta else kind,
        "id": str(message_id),
    }
    if role == "assistant":
        out.update(tool_calls=[], invalid_tool_calls=[])
        if delta:
            out["tool_call_chunks"] = []
    return out


def _plain_texts(content: Any) -> list[str] | None:
    """The texts of a content list of plain text blocks (no citations), else None."""
    if type(content) is not list:
        return None
    texts = []
    for block in content:
        if (
            type(block) is not dict
            or block.get("type") != "text"
            or type(block.get("text")) is not str
            or block.get("annotations", []) != []
            or not _TEXT_KEYS.issuperset(block)
        ):
            return None
        texts.append(block["text"])
    return texts


def _text_list(texts: list[str]) -> str | list[dict[str, Any]]:
    return [{"type": "text", "text": text} for text in texts] if texts else ""


def _to_langchain(message: Message, kept: dict[str, Any] | None) -> dict[str, Any]:
    own: dict[str, Any] = {}
    if isinstance(message.message_id, int):
        own["message_id"] = message.message_id
    forms = kept.get("content") if kept else None
    kind = _TYPE_OF_ROLE[message.role]
    out: dict[str, Any] = {"content": "", **_DEFAULTS}
    out["type"] = _CHUNK_OF_TYPE[kind] if message.delta else kind
    out["id"] = str(message.message_id)
    if message.role == "assistant":
        out.update(_ai_fields(message, own, forms))
    elif message.role == "tool":
        out.update(_tool_fields(message.content, own, forms))
    else:
        out["content"] = _content(message.content, forms)
    if message.role != "assistant" and message.usages is not None:
        own["usages"] = message.usages.model_dump()
    if kept:
        out.update({k: v for k, v in kept.items() if k != "content"})
    for key in _NONE_KEYS:  # optional in the JS SDK's types: absent, never null
        if key in out and out[key] is None:
            del out[key]
    own.update(_message_own(message, kept))
    if own:
        out["additional_kwargs"] = {**out["additional_kwargs"], KEY: own}
    return out


def _message_own(message: Message, kept: dict[str, Any] | None) -> dict[str, Any]:
    """What LangChain has no field for, but the time of a chunk.

    LangChain adds the chunks of a message together, and refuses two
    different times for one key.
    """
    own: dict[str, Any] = {} if message.delta else {"timestamp": message.timestamp}
    metadata = dict(message.metadata)
    if kept:
        del metadata[LANGCHAIN_KEY]
    if metadata:
        own["metadata"] = metadata
    for name in _MESSAGE_FIELDS:
        value = getattr(message, name)
        if value is not None:
            own[name] = value if name != "parsed_content" else _plain(value)
    return own


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if hasattr(value, "model_dump") else value


def _content(blocks: list[ContentBlock], forms: Any) -> str | list[dict[str, Any]]:
    """Blocks as LangChain content: one plain text as a string, else a list of blocks."""
    forms = forms if isinstance(forms, dict) else {}
    if not forms and len(blocks) == 1:
        block = blocks[0]
        if isinstance(block, TextBlock) and block.text and not block.annotations:
            return block.text
    if not blocks:
        return ""
    return [block_to_langchain(block, forms.get(str(i))) for i, block in enumerate(blocks)]


def _ai_fields(message: Message, own: dict[str, Any], forms: Any) -> dict[str, Any]:
    """An AI message's content and tool calls; where the calls stood, in ``own``."""
    others: list[ContentBlock] = []
    calls: list[tuple[int, ToolCallBlock | RemoteToolCallBlock]] = []
    for index, block in enumerate(message.content):
        if isinstance(block, ToolCallBlock | RemoteToolCallBlock):
            calls.append((index, block))
        else:
            others.append(block)
    notes: list[dict[str, Any]] = []
    for j, (index, call) in enumerate(calls):
        note: dict[str, Any] = {}
        if index != len(others) + j:
            note["at"] = index
        if isinstance(call, RemoteToolCallBlock):
            note["remote"] = True
        elif call.tool_type is not None:
            note["tool_type"] = call.tool_type
        notes.append(note)
    if any(notes):
        own["tool_calls"] = notes
    tool_calls = [
        {"name": call.name, "args": call.args, "id": call.id, "type": "tool_call"}
        for _, call in calls
    ]
    out: dict[str, Any] = {"content": _content(others, forms), "tool_calls": tool_calls}
    out["invalid_tool_calls"] = []
    if message.delta:
        out["tool_call_chunks"] = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": j}
            | {"type": "tool_call_chunk"}
            for j, c in enumerate(tool_calls)
        ]
    if message.usages is not None:
        out["usage_metadata"] = _usage_metadata(message.usages)
        if _usages(out["usage_metadata"]) != message.usages:
            own["usages"] = message.usages.model_dump()
    return out


def _tool_fields(blocks: list[ContentBlock], own: dict[str, Any], forms: Any) -> dict[str, Any]:
    """A tool message: one result as ``tool_call_id``/``content``/``status``; else all blocks."""
    if len(blocks) != 1 or not isinstance(blocks[0], ToolResultBlock):
        own["content"] = "blocks"
        first = next((b.call_id for b in blocks if isinstance(b, ToolResultBlock)), "")
        return {"content": _content(blocks, forms), "tool_call_id": first, "status": "success"}
    result = blocks[0]
    output = result.output
    content: Any
    if isinstance(output, str):
        content = output
    elif isinstance(output, list) and (not output or hasattr(output[0], "model_dump")):
        forms = forms if isinstance(forms, dict) else {}
        items = cast("list[ContentBlock]", output)
        content = [block_to_langchain(b, forms.get(str(i))) for i, b in enumerate(items)]
    elif isinstance(output, MediaRef):
        content = [block_to_langchain(_media_block(output))]
        own["output_media"] = True
    else:
        content = json.dumps(output, ensure_ascii=False)
        own["output_json"] = output
    if result.status != ("failed" if result.is_error else "completed"):
        own["status"] = result.status
    status = "error" if result.is_error else "success"
    return {"content": content, "tool_call_id": result.call_id, "status": status}


def _media_block(media: MediaRef) -> ContentBlock:
    """The block a tool's media output is shown as: the kind its MIME type implies."""
    return _block_for(media, media.mime_type or "application/octet-stream")


def _usage_metadata(usages: TokenUsages) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input_tokens": usages.prompt_tokens,
        "output_tokens": usages.completion_tokens,
        "total_tokens": usages.total_tokens,
    }
    inputs = {
        "cache_creation": usages.cache_creation_input_tokens,
        "cache_read": usages.cache_read_input_tokens,
    }
    inputs = {k: v for k, v in inputs.items() if v}
    if inputs:
        out["input_token_details"] = inputs
    if usages.reasoning_tokens:
        out["output_token_details"] = {"reasoning": usages.reasoning_tokens}
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


# --- LangChain -> tenxgraph ----------------------------------------------------------------


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
