"""MCP content as tenxgraph's: tool results, resources and prompts.

A tool result becomes what a tenxgraph tool returns, a resource content
blocks, a prompt messages.

- A result with ``structuredContent`` gives that JSON value: the server
  declared its shape, and the text blocks beside it are by the spec only a
  copy of it for older clients (a value longer than ``max_chars`` as JSON
  gives the blocks instead, cut as below).
- Otherwise one text block gives a string; several blocks, or any that is
  not text, give a list of content blocks: images and audio as inline
  ``MediaRef(kind="data")`` blocks (a checkpointer given a media store moves
  the large ones into it when the result is saved, as any media), embedded
  text resources as text with their URI as an annotation, embedded binary
  resources as images or data blocks, resource links as text naming the link.
- Text past ``max_chars`` (all blocks together) is cut, and the cut says so,
  so one huge answer cannot fill the model's window or the store.
- A resource read gives one block per content the server sent, made as an
  embedded resource of a tool result is; a prompt gives one ``Message`` per
  message, with the role the server gave it. The same limit applies to both.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tenxgraph.core.state import ContentBlock, Message
from tenxgraph.core.state.message_block import (
    AnnotationRef,
    AudioBlock,
    DataBlock,
    ImageBlock,
    MediaRef,
    TextBlock,
)

if TYPE_CHECKING:
    import mcp_types

__all__ = ["prompt_messages", "resource_blocks", "result_output", "result_text"]

Block = TextBlock | ImageBlock | AudioBlock | DataBlock


def result_output(result: mcp_types.CallToolResult, max_chars: int) -> Any:
    """What the model reads for ``result`` (a successful one)."""
    structured = result.structured_content
    if structured is not None and len(json.dumps(structured)) <= max_chars:
        return structured
    blocks = _cut([_block(item) for item in result.content], max_chars)
    if not blocks:
        return ""
    if len(blocks) == 1 and isinstance(blocks[0], TextBlock) and not blocks[0].annotations:
        return blocks[0].text
    return blocks


def result_text(result: mcp_types.CallToolResult, max_chars: int) -> str:
    """The text of a failed result, for the error the model reads."""
    texts = [item.text for item in result.content if item.type == "text"]
    text = "\n".join(texts) or "the tool reported an error without text"
    return text if len(text) <= max_chars else _cut_note(text[:max_chars], len(text) - max_chars)


def resource_blocks(result: mcp_types.ReadResourceResult, max_chars: int) -> list[ContentBlock]:
    """The contents of a resource read, as content blocks (text cut past ``max_chars``)."""
    return list(_cut([_resource_block(contents) for contents in result.contents], max_chars))


def prompt_messages(result: mcp_types.GetPromptResult, max_chars: int) -> list[Message]:
    """A prompt's messages, each with the server's role (text cut past ``max_chars`` in all)."""
    blocks = _cut([_block(message.content) for message in result.messages], max_chars)
    return [
        Message(role=message.role, content=[block])
        for message, block in zip(result.messages, blocks, strict=True)
    ]


def _block(item: mcp_types.ContentBlock) -> Block:
    if item.type == "text":
        return TextBlock(text=item.text)
    if item.type == "image":
        return ImageBlock(media=_inline(item.data, item.mime_type))
    if item.type == "audio":
        return AudioBlock(media=_inline(item.data, item.mime_type))
    if item.type == "resource":
        return _resource_block(item.resource)
    if item.type == "resource_link":
        title = item.title or item.name
        text = f"resource link: {title} <{item.uri}>"
        if item.description:
            text += f": {item.description}"
        return TextBlock(text=text, annotations=[AnnotationRef(url=item.uri, title=title)])
    return TextBlock(text=f"[tenxgraph: an MCP content block of type {item.type!r} left out]")


def _resource_block(
    contents: mcp_types.TextResourceContents | mcp_types.BlobResourceContents,
) -> Block:
    """Text with the resource's URI as its annotation, or an image or data block."""
    if hasattr(contents, "text"):
        return TextBlock(text=contents.text, annotations=[AnnotationRef(url=contents.uri)])
    mime = contents.mime_type or "application/octet-stream"
    if mime.startswith("image/"):
        return ImageBlock(media=_inline(contents.blob, mime), alt_text=contents.uri)
    return DataBlock(mime_type=mime, data_base64=contents.blob)


def _inline(data: str, mime_type: str) -> MediaRef:
    return MediaRef(kind="data", data_base64=data, mime_type=mime_type)


def _cut(blocks: list[Block], max_chars: int) -> list[Block]:
    left = max_chars
    kept: list[Block] = []
    for block in blocks:
        if not isinstance(block, TextBlock):
            kept.append(block)
            continue
        if len(block.text) <= left:
            left -= len(block.text)
            kept.append(block)
            continue
        text = _cut_note(block.text[: max(left, 0)], len(block.text) - max(left, 0))
        kept.append(block.model_copy(update={"text": text}))
        left = 0
    return kept


def _cut_note(text: str, dropped: int) -> str:
    return f"{text}\n[tenxgraph: {dropped} more characters of this MCP result were cut]"
