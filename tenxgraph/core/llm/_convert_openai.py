"""Messages <-> the OpenAI Chat Completions wire format, shared by every OpenAI-shaped backend.

The official API, OpenAI-compatible servers and llama-cpp-python all speak
this format, so one converter serves them: ``chat_params`` builds the request
body, ``ChatStreamAccumulator`` turns streamed chunks (plain dicts) into delta
messages and one completion dict, and ``message_from_completion`` turns a
completion dict into the final ``Message``. The completion dict is kept as
``Message.raw``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from tenxgraph.core.llm.base import ModelRequest, ToolChoice, ToolSpec
from tenxgraph.core.state.message import Message, TokenUsages, new_message_id
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.pairing import repair_pairing
from tenxgraph.core.state.tool_arguments import INVALID_TOOL_ARGS_KEY, tool_call
from tenxgraph.errors import BadRequestError

__all__ = [
    "ChatStreamAccumulator",
    "SchemaStyle",
    "chat_params",
    "message_from_completion",
    "messages_to_wire",
    "usage_from_wire",
]

SchemaStyle = Literal["json_schema", "json_object"]
"""How ``output_schema`` is sent: OpenAI's ``json_schema`` response format, or
llama-cpp-python's ``{"type": "json_object", "schema": ...}``."""

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}

# Blocks that carry nothing the model reads back: kept in history, not sent.
_NOT_SENT = frozenset({"reasoning", "annotation", "error", "remote_tool_call"})


class _Unsupported(Exception):
    """A block the wire format cannot carry; turned into a located BadRequestError."""


def chat_params(
    request: ModelRequest,
    *,
    provider: str,
    defaults: dict[str, Any] | None = None,
    max_tokens_key: str = "max_tokens",
    schema_style: SchemaStyle = "json_schema",
    strings_only: bool = False,
) -> dict[str, Any]:
    """Build a Chat Completions request body (without ``model`` and ``stream``).

    The conversation is repaired first (``repair_pairing``) so the provider
    never receives a tool call without its result or the reverse. Precedence:
    ``defaults`` < the request's own fields < ``request.extra``.
    ``strings_only`` makes every message content a plain string, for chat
    templates that cannot take content parts or a null content.
    """
    params: dict[str, Any] = dict(defaults or {})
    params["messages"] = messages_to_wire(
        repair_pairing(request.messages), provider=provider, strings_only=strings_only
    )
    if request.tools:
        params["tools"] = [_tool_to_wire(tool) for tool in request.tools]
        params["tool_choice"] = _tool_choice_to_wire(request.tool_choice, request.tools, provider)
    if request.output_schema is not None:
        params["response_format"] = _response_format(request, schema_style)
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.max_tokens is not None:
        params[max_tokens_key] = request.max_tokens
    params.update(request.extra)
    return params


def messages_to_wire(
    messages: Sequence[Message], *, provider: str, strings_only: bool = False
) -> list[dict[str, Any]]:
    """Convert messages to Chat Completions messages; one ``tool`` message per tool result."""
    wire: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        try:
            wire.extend(_message_to_wire(message, strings_only))
        except _Unsupported as exc:
            raise BadRequestError(
                f"{provider}: message {index} ({message.role}): {exc}", provider=provider
            ) from None
    return wire


def _message_to_wire(message: Message, strings_only: bool) -> list[dict[str, Any]]:
    blocks = [block for block in message.content if block.type not in _NOT_SENT]
    if message.role == "tool":
        return [_tool_result_to_wire(position, block) for position, block in enumerate(blocks)]
    if message.role == "assistant":
        return [_assistant_to_wire(blocks, strings_only)]
    if message.role == "system" or strings_only:
        return [{"role": message.role, "content": _text_only(blocks, message.role)}]
    parts = [_part_to_wire(position, block) for position, block in enumerate(blocks)]
    if len(parts) == 1 and parts[0]["type"] == "text":
        return [{"role": message.role, "content": parts[0]["text"]}]
    return [{"role": message.role, "content": parts}]


def _text_only(blocks: Sequence[ContentBlock], role: str) -> str:
    texts: list[str] = []
    for position, block in enumerate(blocks):
        if isinstance(block, TextBlock | DocumentBlock) and block.text is not None:
            texts.append(block.text)
        else:
            raise _Unsupported(
                f"block {position}: {block.type} content cannot be sent in a {role} message "
                "here; only text is accepted"
            )
    return "\n".join(texts)


def _assistant_to_wire(blocks: Sequence[ContentBlock], strings_only: bool) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": json.dumps(block.args)},
                }
            )
        else:
            raise _Unsupported(
                f"block {position}: {block.type} content cannot be sent in an assistant message"
            )
    wire: dict[str, Any] = {"role": "assistant"}
    wire["content"] = "".join(texts) if texts or strings_only else None
    if calls:
        wire["tool_calls"] = calls
    return wire


def _tool_result_to_wire(position: int, block: ContentBlock) -> dict[str, Any]:
    if not isinstance(block, ToolResultBlock):
        raise _Unsupported(
            f"block {position}: a tool message may only hold tool_result blocks, "
            f"not {block.type}; put other content in a user message"
        )
    return {"role": "tool", "tool_call_id": block.call_id, "content": _output_text(block.output)}


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, MediaRef):
        raise _Unsupported("a tool result holding media cannot be sent; return text or JSON")
    if isinstance(output, list) and output and all(isinstance(item, BaseModel) for item in output):
        texts: list[str] = []
        for item in output:
            if not isinstance(item, TextBlock):
                raise _Unsupported(
                    f"a tool result holding {getattr(item, 'type', type(item).__name__)} content "
                    "cannot be sent; return text or JSON"
                )
            texts.append(item.text)
        return "".join(texts)
    return json.dumps(output)


def _part_to_wire(position: int, block: ContentBlock) -> dict[str, Any]:
    """One user content part: text, image, audio or file."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        media = block.media
        if media.kind == "file_id":
            raise _Unsupported(
                f"block {position}: Chat Completions cannot take an image by file id; "
                "use a URL or inline data"
            )
        return {"type": "image_url", "image_url": {"url": _url_or_data_url(media)}}
    if isinstance(block, AudioBlock):
        return {"type": "input_audio", "input_audio": _input_audio(position, block.media)}
    if isinstance(block, DocumentBlock):
        if block.media.kind == "url" and block.text is not None:
            return {"type": "text", "text": block.text}
        return {"type": "file", "file": _file(position, block.media, block.media.mime_type)}
    if isinstance(block, DataBlock):
        media = block.media or MediaRef(
            kind="data", data_base64=block.data_base64 or "", mime_type=block.mime_type
        )
        return {"type": "file", "file": _file(position, media, block.mime_type)}
    raise _Unsupported(f"block {position}: {block.type} content cannot be sent in a user message")


def _url_or_data_url(media: MediaRef) -> str:
    if media.kind == "url":
        return media.url or ""
    return f"data:{media.mime_type or 'application/octet-stream'};base64,{media.data_base64}"


def _input_audio(position: int, media: MediaRef) -> dict[str, str]:
    audio_format = _AUDIO_FORMATS.get(media.mime_type or "")
    if media.kind != "data" or audio_format is None:
        raise _Unsupported(
            f"block {position}: Chat Completions takes audio only as inline wav or mp3 data "
            f"(got kind={media.kind!r}, mime_type={media.mime_type!r})"
        )
    return {"data": media.data_base64 or "", "format": audio_format}


def _file(position: int, media: MediaRef, mime_type: str | None) -> dict[str, str]:
    if media.kind == "file_id":
        return {"file_id": media.file_id or ""}
    if media.kind == "data":
        return {
            "filename": media.filename or "file",
            "file_data": f"data:{mime_type or 'application/octet-stream'};base64,"
            f"{media.data_base64}",
        }
    raise _Unsupported(
        f"block {position}: Chat Completions cannot take a file by URL; "
        "upload it and use a file id, or inline it"
    )


def _tool_to_wire(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def _tool_choice_to_wire(
    choice: ToolChoice, tools: Sequence[ToolSpec], provider: str
) -> str | dict[str, Any]:
    if choice in ("auto", "required", "none"):
        return choice
    if choice not in {tool.name for tool in tools}:
        names = ", ".join(tool.name for tool in tools)
        raise BadRequestError(
            f"{provider}: tool_choice {choice!r} is not one of the request's tools ({names})",
            provider=provider,
        )
    return {"type": "function", "function": {"name": choice}}


def _response_format(request: ModelRequest, style: SchemaStyle) -> dict[str, Any]:
    if style == "json_object":
        return {"type": "json_object", "schema": request.output_schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": request.output_schema_name, "schema": request.output_schema},
    }


# --- responses ---------------------------------------------------------------


def usage_from_wire(usage: dict[str, Any] | None) -> TokenUsages | None:
    """Convert a Chat Completions ``usage`` object; None when the server sent none."""
    if not usage:
        return None
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return TokenUsages(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=usage.get("total_tokens") or prompt + completion,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
        cache_read_input_tokens=prompt_details.get("cached_tokens") or 0,
        audio_tokens=(prompt_details.get("audio_tokens") or 0)
        + (completion_details.get("audio_tokens") or 0),
    )


def message_from_completion(
    completion: dict[str, Any], *, message_id: str | int | None = None
) -> Message:
    """Convert a Chat Completions response dict (first choice) to an assistant ``Message``."""
    choices = completion.get("choices") or [{}]
    choice = choices[0]
    wire = choice.get("message") or {}
    content: list[ContentBlock] = []
    reasoning = _reasoning_text(wire)
    if reasoning:
        content.append(ReasoningBlock(summary=reasoning))
    text = wire.get("content")
    if text:
        refs, spans = _citations(wire.get("annotations") or [])
        content.append(TextBlock(text=text, annotations=refs))
        if refs:
            content.append(AnnotationBlock(kind="citation", refs=refs, spans=spans))
    audio = wire.get("audio")
    if audio and audio.get("data"):
        content.append(_output_audio(audio))
    metadata: dict[str, Any] = {}
    if wire.get("refusal"):
        metadata["refusal"] = wire["refusal"]
        if not text:
            content.append(TextBlock(text=wire["refusal"]))
    tool_calls = wire.get("tool_calls") or []
    refused: dict[str, Any] = {}
    for call in tool_calls:
        function = call.get("function") or {}
        name, arguments = function.get("name") or "", function.get("arguments")
        content.append(tool_call(call["id"], name, arguments, refused))
    if refused:
        metadata[INVALID_TOOL_ARGS_KEY] = refused
    if choice.get("finish_reason"):
        metadata["finish_reason"] = choice["finish_reason"]
    if completion.get("model"):
        metadata["model"] = completion["model"]
    return Message(
        message_id=message_id if message_id is not None else new_message_id(),
        role="assistant",
        content=content,
        tools_calls=tool_calls or None,
        metadata=metadata,
        usages=usage_from_wire(completion.get("usage")),
        raw=completion,
    )


def _reasoning_text(wire: dict[str, Any]) -> str | None:
    """Reasoning text from servers that return it (vLLM, DeepSeek, llama.cpp, OpenRouter)."""
    value = wire.get("reasoning_content") or wire.get("reasoning")
    return value if isinstance(value, str) else None


def _citations(
    annotations: list[dict[str, Any]],
) -> tuple[list[AnnotationRef], list[tuple[int, int]]]:
    refs: list[AnnotationRef] = []
    spans: list[tuple[int, int]] = []
    for annotation in annotations:
        citation = annotation.get("url_citation")
        if annotation.get("type") != "url_citation" or not citation:
            continue
        refs.append(AnnotationRef(url=citation.get("url"), title=citation.get("title")))
        spans.append((citation.get("start_index") or 0, citation.get("end_index") or 0))
    return refs, spans


def _output_audio(audio: dict[str, Any]) -> AudioBlock:
    audio_format = audio.get("format") or "wav"
    return AudioBlock(
        media=MediaRef(kind="data", data_base64=audio["data"], mime_type=f"audio/{audio_format}"),
        transcript=audio.get("transcript"),
    )


@dataclass
class _CallSlot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class ChatStreamAccumulator:
    """Assemble streamed Chat Completions chunks into delta messages and one completion.

    Tool calls are assembled by ``index``: ``id`` and ``name`` are taken once
    (llama.cpp's server repeats them in every chunk), only ``arguments`` is
    concatenated. Every delta and the final message share one message id.
    """

    def __init__(self) -> None:
        self.message_id: str = new_message_id()
        self._header: dict[str, Any] = {}
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._annotations: list[dict[str, Any]] = []
        self._calls: dict[int, _CallSlot] = {}
        self._finish_reason: str | None = None
        self._usage: dict[str, Any] | None = None

    def feed(self, chunk: dict[str, Any]) -> list[Message]:
        """Take one chunk; return the delta messages it produces (text and reasoning)."""
        for key in ("id", "created", "model", "system_fingerprint"):
            if chunk.get(key) and key not in self._header:  # Azure sends a first empty chunk
                self._header[key] = chunk[key]
        if chunk.get("usage"):
            self._usage = chunk["usage"]
        deltas: list[Message] = []
        for choice in chunk.get("choices") or []:
            if (choice.get("index") or 0) != 0:
                continue
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
            deltas.extend(self._feed_delta(choice.get("delta") or {}))
        return deltas

    def _feed_delta(self, delta: dict[str, Any]) -> list[Message]:
        deltas: list[Message] = []
        reasoning = _reasoning_text(delta)
        if reasoning:
            self._reasoning.append(reasoning)
            deltas.append(self._delta(ReasoningBlock(summary=reasoning)))
        if delta.get("content"):
            self._text.append(delta["content"])
            deltas.append(self._delta(TextBlock(text=delta["content"])))
        if delta.get("refusal"):
            self._refusal.append(delta["refusal"])
        self._annotations.extend(delta.get("annotations") or [])
        for call in delta.get("tool_calls") or []:
            self._feed_call(call)
        return deltas

    def _feed_call(self, call: dict[str, Any]) -> None:
        index = call.get("index")
        if index is None:  # some servers omit it: match by id, else a new call
            index = next(
                (key for key, slot in self._calls.items() if call.get("id") == slot.id),
                len(self._calls),
            )
        slot = self._calls.setdefault(index, _CallSlot())
        function = call.get("function") or {}
        slot.id = slot.id or call.get("id") or ""
        slot.name = slot.name or function.get("name") or ""
        if function.get("arguments"):
            slot.arguments.append(function["arguments"])

    def _delta(self, block: ContentBlock) -> Message:
        return Message(message_id=self.message_id, role="assistant", content=[block], delta=True)

    @property
    def usage(self) -> dict[str, Any] | None:
        """The usage object the stream reported, if any."""
        return self._usage

    def set_usage(self, usage: dict[str, Any]) -> None:
        """Record usage measured outside the stream (for runtimes that report none)."""
        self._usage = usage

    def generated_text(self) -> str:
        """Everything generated so far: text, then each tool call's arguments."""
        calls = "".join("".join(slot.arguments) for slot in self._calls.values())
        return "".join(self._text) + calls

    def completion(self) -> dict[str, Any]:
        """The stream as one JSON-safe Chat Completions response dict."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._annotations:
            message["annotations"] = self._annotations
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": slot.id or f"call_{self.message_id}_{index}",
                    "type": "function",
                    "function": {"name": slot.name, "arguments": "".join(slot.arguments)},
                }
                for index, slot in sorted(self._calls.items())
            ]
        return {
            **self._header,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason}],
            "usage": self._usage,
        }

    def message(self) -> Message:
        """The complete message the stream produced."""
        return message_from_completion(self.completion(), message_id=self.message_id)
