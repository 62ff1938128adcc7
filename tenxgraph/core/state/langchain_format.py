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

from pydantic_core import to_json

from tenxgraph.core.state._langchain_blocks import KEY, block_to_langchain
from tenxgraph.core.state._langchain_read import (
    _CHUNK_OF_TYPE,
    _DEFAULTS,
    _MESSAGE_FIELDS,
    _TYPE_OF_ROLE,
    LANGCHAIN_KEY,
    LANGCHAIN_TYPES,
    _usage_metadata,
    _usages,
    from_langchain_message,
    is_langchain_message,
)
from tenxgraph.core.state.message import Message, TokenUsages, _block_for
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
_NONE_KEYS = ("name", "usage_metadata", "chunk_position", "artifact")
"""Keys whose LangChain default is None: left out at that default."""
_PLAIN_KEYS = frozenset(Message.model_fields)
_TEXT_KEYS = frozenset({"type", "text", "annotations"})

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
    chunks and chat turns; an answer's usage too, when LangChain's fields hold
    it) is written from the JSON directly, the same dict
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
    if any(data.get(name) is not None for name in _MESSAGE_FIELDS):
        return None
    role, message_id, delta = data.get("role"), data.get("message_id"), data.get("delta", False)
    usage, usages = None, data.get("usages")
    if usages is not None:  # an assistant's usage LangChain's fields hold whole, or not plain
        usage = _plain_usage(usages) if role == "assistant" else None
        if usage is None:
            return None
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
        if usage is not None:
            out["usage_metadata"] = usage
    return out


_USAGE_KEYS = frozenset(TokenUsages.model_fields)


def _plain_usage(usages: Any) -> dict[str, Any] | None:
    """``usage_metadata`` of a usages JSON that it holds whole, else None.

    Whole: integers only, and no image or audio tokens, which LangChain has
    no field for (the general path keeps those usages under ``additional_kwargs``).
    """
    if type(usages) is not dict or usages.keys() != _USAGE_KEYS:
        return None
    if any(type(value) is not int for value in usages.values()):
        return None
    if usages["image_tokens"] or usages["audio_tokens"]:
        return None
    return _usage_metadata(usages)


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
