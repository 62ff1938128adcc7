"""Messages <-> Anthropic Messages API wire format (plain dicts, no SDK import).

Requests: system messages become the ``system`` parameter; tool results go
into a user turn, and consecutive turns of the same role are merged (so the
results of one tool group form one user message, before any user text).
Thinking blocks are sent back only with the signature Anthropic gave them.
Anthropic wants the first turn to be the user's; a conversation that opens
with an assistant turn (an injected summary, a trimmed window) gets
``OPENING_USER_TEXT`` as its first user turn.

Responses: text (with citations), thinking, redacted thinking and tool use
become content blocks (structured output comes as text). ``StreamAccumulator``
assembles the raw stream events itself: the SDK's own accumulation parses
streamed tool input leniently (a cut-off ``{"city": "Par`` becomes ``{}``), so
here the input's JSON text is kept and judged by ``tool_call`` like every
adapter's.
"""

from __future__ import annotations

from typing import Any

from tenxgraph.core.llm._wire import (
    decoded_text,
    output_blocks,
    output_text,
    provider_blocks,
    unsupported,
)
from tenxgraph.core.state.message import Message, TokenUsages
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.tool_arguments import parse_tool_arguments, tool_call

__all__ = [
    "OPENING_USER_TEXT",
    "PROVIDER",
    "StreamAccumulator",
    "from_wire_content",
    "to_wire",
    "usage_from_wire",
]

OPENING_USER_TEXT = "(The conversation so far continues below.)"
"""First user turn sent when a conversation opens with the assistant."""

PROVIDER = "anthropic"

Wire = dict[str, Any]


def to_wire(messages: list[Message]) -> tuple[list[Wire], list[Wire]]:
    """Return ``(system, messages)``: the system text blocks and the alternating turns."""
    system: list[Wire] = []
    turns: list[Wire] = []
    for index, message in enumerate(messages):
        where = f"message {index}"
        if message.role == "system":
            system.extend(_system_blocks(message, where))
            continue
        role = "assistant" if message.role == "assistant" else "user"
        if message.role == "assistant":
            blocks = _assistant_blocks(message, where)
        elif message.role == "tool":
            blocks = _tool_result_blocks(message, where)
        else:
            blocks = [_user_block(b, f"{where} block {i}") for i, b in _visible(message)]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING_USER_TEXT}]})
    return system, turns


def _visible(message: Message) -> list[tuple[int, ContentBlock]]:
    """The blocks to send, with their indexes.

    Annotation blocks describe an earlier answer and Anthropic rejects empty
    text blocks, so neither is sent.
    """
    return [
        (index, block)
        for index, block in enumerate(message.content)
        if not isinstance(block, AnnotationBlock)
        and not (isinstance(block, TextBlock) and not block.text)
    ]


def _system_blocks(message: Message, where: str) -> list[Wire]:
    blocks: list[Wire] = []
    for _, block in _visible(message):
        if not isinstance(block, TextBlock):
            raise unsupported(PROVIDER, f"{block.type} content in a system message", where)
        blocks.append({"type": "text", "text": block.text})
    return blocks


def _assistant_blocks(message: Message, where: str) -> list[Wire]:
    opaque = provider_blocks(message, PROVIDER)
    blocks: list[Wire] = []
    for index, block in _visible(message):
        if isinstance(block, TextBlock):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCallBlock | RemoteToolCallBlock):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.args}
            )
        elif isinstance(block, ReasoningBlock):
            # Thinking without Anthropic's signature (e.g. from another provider) cannot be
            # sent back: the API would reject it. It stays in the history, unsent.
            data = opaque.get(index, {})
            if "redacted_thinking" in data:
                blocks.append({"type": "redacted_thinking", "data": data["redacted_thinking"]})
            elif "signature" in data:
                blocks.append(
                    {"type": "thinking", "thinking": block.summary, "signature": data["signature"]}
                )
        elif isinstance(block, ErrorBlock):
            blocks.append({"type": "text", "text": f"[error] {block.message}"})
        else:
            raise unsupported(PROVIDER, f"{block.type} content from the assistant", where)
    return blocks


def _tool_result_blocks(message: Message, where: str) -> list[Wire]:
    blocks: list[Wire] = []
    for index, block in _visible(message):
        if not isinstance(block, ToolResultBlock):
            blocks.append(_user_block(block, f"{where} block {index}"))
            continue
        result: Wire = {
            "type": "tool_result",
            "tool_use_id": block.call_id,
            "content": _tool_output(block.output, f"{where} block {index}"),
        }
        if block.is_error or block.status == "failed":
            result["is_error"] = True
        blocks.append(result)
    return blocks


def _tool_output(output: Any, where: str) -> str | list[Wire]:
    if isinstance(output, MediaRef):
        return [_media_block(output, where)]
    blocks = output_blocks(output)
    if blocks is not None:
        return [_user_block(item, f"{where} output {i}") for i, item in enumerate(blocks)]
    return output_text(output)


def _user_block(block: ContentBlock, where: str) -> Wire:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        return {"type": "image", "source": _source(block.media, where)}
    if isinstance(block, DocumentBlock):
        return _document(block.media, where)
    if isinstance(block, DataBlock) and block.media is not None:
        return _media_block(block.media.model_copy(update={"mime_type": block.mime_type}), where)
    if isinstance(block, DataBlock) and block.data_base64 is not None:
        media = MediaRef(kind="data", data_base64=block.data_base64, mime_type=block.mime_type)
        return _media_block(media, where)
    if isinstance(block, ErrorBlock):
        return {"type": "text", "text": f"[error] {block.message}"}
    raise unsupported(PROVIDER, f"{block.type} content", where)


def _media_block(media: MediaRef, where: str) -> Wire:
    if (media.mime_type or "").startswith("image/"):
        return {"type": "image", "source": _source(media, where)}
    return _document(media, where)


def _document(media: MediaRef, where: str) -> Wire:
    mime = media.mime_type or ""
    if media.kind == "data" and mime.startswith("text/"):
        source: Wire = {
            "type": "text",
            "media_type": "text/plain",
            "data": decoded_text(media, where=where),
        }
    elif media.kind == "data" and mime != "application/pdf":
        raise unsupported(PROVIDER, f"inline documents of type {mime or 'unknown'!r}", where)
    else:
        source = _source(media, where)
    document: Wire = {"type": "document", "source": source}
    if media.filename:
        document["title"] = media.filename
    return document


def _source(media: MediaRef, where: str) -> Wire:
    if media.kind == "url":
        return {"type": "url", "url": media.url}
    if media.kind == "file_id":
        return {"type": "file", "file_id": media.file_id}
    if not media.mime_type:
        raise unsupported(PROVIDER, "inline media without a mime_type", where)
    return {"type": "base64", "media_type": media.mime_type, "data": media.data_base64}


def from_wire_content(
    content: list[Wire], *, refused: dict[str, Any]
) -> tuple[list[ContentBlock], dict[int, dict[str, Any]]]:
    """Return our blocks for a response's ``content``, and the opaque data to keep per block.

    A ``tool_use`` input is a decoded object, or the streamed JSON text when
    that is not one; calls whose input is refused are recorded in ``refused``.
    """
    blocks: list[ContentBlock] = []
    opaque: dict[int, dict[str, Any]] = {}
    for item in content:
        kind = item.get("type")
        if kind == "text":
            refs = [_citation(c) for c in item.get("citations") or []]
            blocks.append(TextBlock(text=item["text"], annotations=refs))
        elif kind == "thinking":
            opaque[len(blocks)] = {"signature": item.get("signature", "")}
            blocks.append(ReasoningBlock(summary=item.get("thinking", "")))
        elif kind == "redacted_thinking":
            opaque[len(blocks)] = {"redacted_thinking": item["data"]}
            blocks.append(ReasoningBlock(summary=""))
        elif kind == "tool_use":
            blocks.append(tool_call(item["id"], item["name"], item.get("input"), refused))
        # Server-side tool blocks (web search, code execution...) stay in ``raw`` only: they are
        # run and answered by Anthropic, so they are no call this library must pair.
    return blocks, opaque


def _citation(citation: Wire) -> AnnotationRef:
    """Where a citation points: web results by URL, documents by page or start position."""
    kind = citation.get("type")
    start = {
        "char_location": "start_char_index",
        "content_block_location": "start_block_index",
        "search_result_location": "start_block_index",
    }.get(kind or "")
    return AnnotationRef(
        url=citation.get("url") or citation.get("source"),
        file_id=citation.get("file_id"),
        page=citation.get("start_page_number"),
        index=citation.get(start) if start else None,
        title=citation.get("title") or citation.get("document_title"),
    )


class StreamAccumulator:
    """Assemble raw stream events (as dicts) into the response: ``feed`` each, then ``response``."""

    def __init__(self) -> None:
        self._message: Wire = {"content": []}
        self._json: dict[int, list[str]] = {}

    def feed(self, event: Wire) -> None:
        """Take one raw event: message start, block start, block delta or message delta."""
        kind = event.get("type")
        if kind == "message_start":
            self._message = {**event.get("message", {}), "content": []}
        elif kind == "content_block_start":
            self._message["content"].append(dict(event.get("content_block") or {}))
        elif kind == "content_block_delta":
            self._delta(event["index"], event.get("delta") or {})
        elif kind == "message_delta":
            self._message.update(event.get("delta") or {})
            usage = self._message.setdefault("usage", {})
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})

    def block(self, index: int) -> Wire:
        """The content block at ``index`` as assembled so far."""
        block: Wire = self._message["content"][index]
        return block

    def _delta(self, index: int, delta: Wire) -> None:
        block = self.block(index)
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature", "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(delta.get("partial_json") or "")

    def response(self) -> Wire:
        """The assembled response; streamed tool input is decoded when it is a JSON object."""
        for index, parts in self._json.items():
            text = "".join(parts)
            parsed = parse_tool_arguments(text)
            self.block(index)["input"] = parsed.args if parsed.error is None else text
        return self._message


def usage_from_wire(usage: Wire) -> TokenUsages:
    """Anthropic usage; ``prompt_tokens`` counts all input, cached or not."""
    created = usage.get("cache_creation_input_tokens") or 0
    read = usage.get("cache_read_input_tokens") or 0
    prompt = (usage.get("input_tokens") or 0) + created + read
    completion = usage.get("output_tokens") or 0
    details = usage.get("output_tokens_details") or {}
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        reasoning_tokens=details.get("thinking_tokens") or 0,
        cache_creation_input_tokens=created,
        cache_read_input_tokens=read,
    )
