"""A readable transcript of messages, for the summarizing model.

The summarizer gets the conversation as text rather than as messages: a
tool call in a request that declares no tools is refused by some providers,
and a transcript lets it see calls and results side by side.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)

__all__ = ["TOOL_OUTPUT_CHARS", "render_transcript"]

TOOL_OUTPUT_CHARS = 4000
"""Longest tool output shown to the summarizer; the rest is elided with a note, so one
huge result cannot overflow the summarizer's own window."""

_SPEAKERS = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def render_transcript(messages: Sequence[Message], previous_summary: str | None = None) -> str:
    """Render ``messages`` (and the summary they continue) as plain text, one line per part."""
    names = {
        call.id: call.name
        for message in messages
        for call in message.content
        if isinstance(call, ToolCallBlock | RemoteToolCallBlock)
    }
    lines: list[str] = []
    if previous_summary:
        lines += ["Summary of the conversation so far:", previous_summary, ""]
        lines.append("Messages that followed:")
    for message in messages:
        speaker = _SPEAKERS[message.role]
        lines.extend(f"{speaker}: {part}" for part in _parts(message.content, names))
    return "\n".join(lines)


def _parts(blocks: Sequence[Any], names: dict[str, str]) -> Iterator[str]:
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text:
                yield block.text
        elif isinstance(block, ToolCallBlock | RemoteToolCallBlock):
            yield f"[called tool {block.name} (call {block.id}) with {_json(block.args)}]"
        elif isinstance(block, ToolResultBlock):
            failed = " (failed)" if block.is_error or block.status == "failed" else ""
            name = names.get(block.call_id, "a tool")
            yield f"[result of {name} (call {block.call_id}){failed}: {_output(block.output)}]"
        elif isinstance(block, ErrorBlock):
            yield f"[error: {block.message}]"
        elif isinstance(block, DocumentBlock):
            yield f"[document {_media(block.media)}]" + (
                f" {block.excerpt}" if block.excerpt else ""
            )
        elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            yield f"[{block.type} {_media(block.media)}]"
        elif isinstance(block, DataBlock):
            yield f"[data {block.mime_type}]"


def _output(output: Any) -> str:
    if isinstance(output, MediaRef):
        text = f"[media {_media(output)}]"
    elif isinstance(output, list) and output and all(isinstance(i, BaseModel) for i in output):
        text = " ".join(_parts(output, {}))
    elif isinstance(output, str):
        text = output
    else:
        text = _json(output)
    if len(text) > TOOL_OUTPUT_CHARS:
        text = f"{text[:TOOL_OUTPUT_CHARS]} ... ({len(text) - TOOL_OUTPUT_CHARS} characters elided)"
    return text


def _media(media: MediaRef) -> str:
    return media.filename or media.url or media.file_id or media.mime_type or "(inline)"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
