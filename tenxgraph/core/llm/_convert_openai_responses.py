"""Messages <-> OpenAI Responses API items (plain dicts, no SDK import).

Requests: every message becomes one or more input items in order; system
messages stay in place as ``system`` items, tool calls become
``function_call`` items and tool results ``function_call_output`` items,
linked by ``call_id``. Reasoning goes back as a ``reasoning`` item only when
this provider produced it (its id and encrypted content are kept in
``metadata["provider_data"]``).

Responses: output text (with citations), function calls and reasoning
summaries become content blocks; hosted-tool items stay in ``raw``.
"""

from __future__ import annotations

import json
import mimetypes
from typing import Any

from tenxgraph.core.llm._wire import (
    output_blocks,
    output_text,
    provider_blocks,
    unsupported,
)
from tenxgraph.core.state.message import Message, TokenUsages
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
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
from tenxgraph.core.state.tool_arguments import tool_call

__all__ = ["OPAQUE_KEY", "PROVIDER", "from_wire_output", "to_wire", "usage_from_wire"]

PROVIDER = "openai"
OPAQUE_KEY = "openai_responses"
"""Owner name of the opaque per-block data (item ids, encrypted reasoning) in message metadata."""

Wire = dict[str, Any]


def to_wire(messages: list[Message]) -> list[Wire]:
    """Return the ``input`` items for ``messages``."""
    items: list[Wire] = []
    for index, message in enumerate(messages):
        where = f"message {index}"
        if message.role == "assistant":
            items.extend(_assistant_items(message, where))
        elif message.role == "tool":
            items.extend(_tool_items(message, where))
        else:
            parts = [
                _input_part(block, f"{where} block {i}")
                for i, block in enumerate(message.content)
                if not isinstance(block, AnnotationBlock)
            ]
            if parts:
                items.append({"type": "message", "role": message.role, "content": parts})
    return items


def _assistant_items(message: Message, where: str) -> list[Wire]:
    opaque = provider_blocks(message, OPAQUE_KEY)
    items: list[Wire] = []
    for index, block in enumerate(message.content):
        data = opaque.get(index, {})
        if isinstance(block, TextBlock):
            if block.text:
                items.append({"type": "message", "role": "assistant", "content": block.text})
        elif isinstance(block, ToolCallBlock | RemoteToolCallBlock):
            call: Wire = {
                "type": "function_call",
                "call_id": block.id,
                "name": block.name,
                "arguments": json.dumps(block.args),
            }
            if "id" in data:
                call["id"] = data["id"]
            items.append(call)
        elif isinstance(block, ReasoningBlock):
            # Reasoning is replayed by its id (and encrypted content); reasoning from
            # another provider has neither and stays in the history, unsent.
            if "id" in data:
                items.append(_reasoning_item(block, data))
        elif isinstance(block, ErrorBlock):
            items.append({"type": "message", "role": "assistant", "content": block.message})
        elif not isinstance(block, AnnotationBlock):
            raise unsupported(PROVIDER, f"{block.type} content from the assistant", where)
    return items


def _reasoning_item(block: ReasoningBlock, data: Wire) -> Wire:
    summary = data.get("summary")
    if summary is None:
        summary = [{"type": "summary_text", "text": block.summary}] if block.summary else []
    item: Wire = {"type": "reasoning", "id": data["id"], "summary": summary}
    if data.get("encrypted_content"):
        item["encrypted_content"] = data["encrypted_content"]
    return item


def _tool_items(message: Message, where: str) -> list[Wire]:
    items: list[Wire] = []
    for index, block in enumerate(message.content):
        if not isinstance(block, ToolResultBlock):
            raise unsupported(PROVIDER, f"{block.type} content in a tool message", where)
        output: str | list[Wire]
        blocks = output_blocks(block.output)
        if isinstance(block.output, MediaRef):
            output = [_media_part(block.output, f"{where} block {index}")]
        elif blocks is not None:
            output = [_input_part(b, f"{where} block {index}") for b in blocks]
        else:
            output = output_text(block.output)
        items.append({"type": "function_call_output", "call_id": block.call_id, "output": output})
    return items


def _input_part(block: ContentBlock, where: str) -> Wire:
    if isinstance(block, TextBlock):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, ImageBlock | DocumentBlock):
        return _media_part(block.media, where, image=isinstance(block, ImageBlock))
    if isinstance(block, DataBlock):
        media = block.media or MediaRef(kind="data", data_base64=block.data_base64 or "")
        return _media_part(media.model_copy(update={"mime_type": block.mime_type}), where)
    if isinstance(block, ErrorBlock):
        return {"type": "input_text", "text": f"[error] {block.message}"}
    if isinstance(block, AudioBlock):
        raise unsupported(PROVIDER, "audio input in the Responses API (use OpenAIChatModel)", where)
    raise unsupported(PROVIDER, f"{block.type} content", where)


def _media_part(media: MediaRef, where: str, *, image: bool | None = None) -> Wire:
    if image is None:
        image = (media.mime_type or "").startswith("image/")
    if image:
        part: Wire = {"type": "input_image", "detail": "auto"}
        if media.kind == "file_id":
            part["file_id"] = media.file_id
        else:
            part["image_url"] = media.url if media.kind == "url" else _data_url(media, where)
        return part
    part = {"type": "input_file"}
    if media.kind == "file_id":
        part["file_id"] = media.file_id
    elif media.kind == "url":
        part["file_url"] = media.url
    else:
        part["file_data"] = _data_url(media, where)
        extension = mimetypes.guess_extension(media.mime_type or "") or ""
        part["filename"] = media.filename or f"document{extension}"
    return part


def _data_url(media: MediaRef, where: str) -> str:
    if not media.mime_type:
        raise unsupported(PROVIDER, "inline media without a mime_type", where)
    return f"data:{media.mime_type};base64,{media.data_base64}"


def from_wire_output(
    output: list[Wire], refused: dict[str, Any]
) -> tuple[list[ContentBlock], dict[int, dict[str, Any]]]:
    """Return our blocks for a response's ``output`` items, and the opaque data per block.

    Calls whose arguments are refused are recorded in ``refused`` (see ``tool_call``).
    """
    blocks: list[ContentBlock] = []
    opaque: dict[int, dict[str, Any]] = {}
    for item in output:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text":
                    refs = [_annotation(a) for a in part.get("annotations") or []]
                    blocks.append(TextBlock(text=part.get("text", ""), annotations=refs))
                elif part.get("type") == "refusal":
                    blocks.append(TextBlock(text=part.get("refusal", "")))
        elif kind == "function_call":
            if item.get("id"):
                opaque[len(blocks)] = {"id": item["id"]}
            complete = item.get("status") != "incomplete"  # cut off by the token limit
            blocks.append(
                tool_call(
                    item["call_id"], item["name"], item.get("arguments"), refused, complete=complete
                )
            )
        elif kind == "reasoning":
            summary = item.get("summary") or []
            texts = [part.get("text", "") for part in item.get("content") or []]
            opaque[len(blocks)] = {
                "id": item["id"],
                "summary": summary,
                **(
                    {"encrypted_content": item["encrypted_content"]}
                    if item.get("encrypted_content")
                    else {}
                ),
            }
            blocks.append(
                ReasoningBlock(
                    summary="\n\n".join(part.get("text", "") for part in summary),
                    details=texts or None,
                )
            )
        # Hosted tools (web search, file search, code interpreter...) run at OpenAI and are
        # answered there: they stay in ``raw`` and are no call this library must pair.
    return blocks, opaque


def _annotation(annotation: Wire) -> AnnotationRef:
    return AnnotationRef(
        url=annotation.get("url"),
        file_id=annotation.get("file_id"),
        index=annotation.get("start_index", annotation.get("index")),
        title=annotation.get("title") or annotation.get("filename"),
    )


def usage_from_wire(usage: Wire) -> TokenUsages:
    """Responses usage; ``input_tokens`` already includes the cached ones."""
    inputs = usage.get("input_tokens_details") or {}
    outputs = usage.get("output_tokens_details") or {}
    prompt = usage.get("input_tokens") or 0
    completion = usage.get("output_tokens") or 0
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=usage.get("total_tokens") or prompt + completion,
        reasoning_tokens=outputs.get("reasoning_tokens") or 0,
        cache_read_input_tokens=inputs.get("cached_tokens") or 0,
        cache_creation_input_tokens=inputs.get("cache_write_tokens") or 0,
    )
