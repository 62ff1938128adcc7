"""``Message``: one turn of a conversation, made of typed content blocks."""

from __future__ import annotations

import base64
import hashlib
import json
import mimetypes
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeAlias, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationInfo
from pydantic_core import to_json

from tenxgraph.core.state.json_policy import check_json_data
from tenxgraph.core.state.message_block import (
    AudioBlock,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    FiniteJson,
    ImageBlock,
    JsonChecked,
    MediaRef,
    Text,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)
from tenxgraph.errors import ConfigError

__all__ = [
    "MAX_INLINE_BYTES",
    "IdGenerator",
    "MediaSink",
    "Message",
    "MessagesAdapter",
    "Role",
    "TokenUsages",
    "new_message_id",
]

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]

IdGenerator: TypeAlias = Callable[[], "str | int"]
"""Makes message ids. A graph holds its own; there is no process-wide one."""

MAX_INLINE_BYTES = 5 * 1024 * 1024
"""Largest file ``Message.from_file`` inlines as base64 (5 MiB, the smallest common
provider limit for an inline image). Larger files belong in a media store, by URL."""

_OFFLOAD_BYTES = 64 * 1024
"""Files over this go to the media store ``from_file`` is given (the checkpointers' default
threshold, ``tenxgraph.storage.media.offload.DEFAULT_OFFLOAD_BYTES``)."""


class MediaSink(Protocol):
    """What ``Message.from_file`` needs of a media store: ``put`` a file, get its ``MediaRef``.

    Every ``tenxgraph.storage.media.MediaStore`` is one. Declared here so the
    data model names no storage module: the store depends on the model, not
    the other way round.
    """

    def put(
        self, data: Path, mime_type: str | None, *, user_id: str, filename: str | None
    ) -> MediaRef:
        """Store the file's bytes for ``user_id``; a ref to them (``graph://media/{key}``)."""
        ...


_DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/msword",
        "application/rtf",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.oasis.opendocument.text",
    }
)

# Leading bytes of common formats, for files whose name says nothing useful.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


_id_bits = random.Random()  # a private generator: user seeding of `random` cannot repeat ids
os.register_at_fork(after_in_child=_id_bits.seed)


def new_message_id() -> str:
    """Return a fresh unique 128-bit hex message id (the default id generator)."""
    return _id_bits.getrandbits(128).to_bytes(16, "big").hex()  # cheaper than a format spec


class TokenUsages(BaseModel):
    """Token consumption of a single model response."""

    model_config = ConfigDict(extra="forbid")

    completion_tokens: int
    """Tokens generated in the response."""
    prompt_tokens: int
    """Tokens in the input prompt."""
    total_tokens: int
    """Sum of completion and prompt tokens."""
    reasoning_tokens: int = 0
    """Tokens spent on extended reasoning."""
    cache_creation_input_tokens: int = 0
    """Prompt-cache write tokens."""
    cache_read_input_tokens: int = 0
    """Prompt-cache read tokens."""
    image_tokens: int | None = 0
    """Image modality tokens."""
    audio_tokens: int | None = 0
    """Audio modality tokens."""


def _json_content(value: Any, info: ValidationInfo) -> Any:
    """``parsed_content`` from Python: a model is checked by what it dumps to."""
    if isinstance(value, BaseModel):
        check_json_data(value.model_dump(mode="json"), "parsed_content")
    elif value:
        check_json_data(value, "parsed_content")
    return value


class Message(BaseModel):
    r"""One turn: a role, an ordered list of content blocks, and metadata.

    Validation refuses what could not be sent to a provider or stored, naming
    the field: unknown keys (a misspelt ``contnet`` is an error, not dropped),
    text holding a lone surrogate such as ``"\ud800"``, and NaN or infinity
    anywhere in the message's data (JSON has no such numbers).
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    message_id: Text | int = Field(default_factory=new_message_id)
    """Unique id; a message whose id is already in context is not added twice."""
    role: Role
    """Who produced the message."""
    content: list[ContentBlock]
    """Ordered content blocks (any sequence is accepted and stored as a list)."""
    delta: bool = False
    """True for a streaming chunk; deltas are never stored in state."""
    tools_calls: Annotated[
        list[dict[str, Any]] | None, JsonChecked(list[dict[str, FiniteJson]] | None)
    ] = None
    """Raw tool call dicts from a provider SDK; for adapters only."""
    reasoning: Text | None = None
    """Reasoning trace (deprecated: use a ``ReasoningBlock`` in ``content``)."""
    timestamp: float | None = Field(default_factory=time.time)
    """UNIX time the message was created."""
    metadata: Annotated[dict[str, Any], JsonChecked(dict[str, FiniteJson])] = Field(
        default_factory=dict
    )
    """Arbitrary JSON-serializable metadata."""
    usages: TokenUsages | None = None
    """Token usage of the model call that produced this message."""
    raw: Annotated[dict[str, Any] | None, JsonChecked(dict[str, FiniteJson] | None)] = None
    """The raw provider response."""
    parsed_content: Annotated[
        dict[str, Any] | BaseModel | None,
        JsonChecked(dict[str, FiniteJson] | None, check=_json_content),
    ] = None
    """Structured output validated against the agent's ``output_schema``.
    Stored as JSON: after a round trip through storage it is a dict."""

    def text(self) -> str:
        """Concatenate the text of TextBlocks and the output of ToolResultBlocks."""
        parts: list[str] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolResultBlock):
                parts.append(_output_text(block.output))
        return "".join(parts)

    def tool_calls(self) -> list[ToolCallBlock]:
        """The tool call blocks of this message, in order."""
        return [block for block in self.content if isinstance(block, ToolCallBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        """The tool result blocks of this message, in order."""
        return [block for block in self.content if isinstance(block, ToolResultBlock)]

    @classmethod
    def text_message(
        cls,
        text: str,
        role: Role = "user",
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """Create a message holding one text block (a user message by default)."""
        if message_id is not None:  # ``_make`` inlined: the commonest way to make a message
            fields["message_id"] = message_id
        return cls(role=role, content=[TextBlock(text=text)], **fields)

    @classmethod
    def tool_message(
        cls,
        content: Sequence[ContentBlock],
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """Create a tool-role message, usually holding ``ToolResultBlock`` entries."""
        return cls._make("tool", list(content), message_id, fields)

    @classmethod
    def image_message(
        cls,
        image: str | MediaRef,
        text: str | None = None,
        role: Role = "user",
        message_id: str | int | None = None,
        *,
        mime_type: str | None = None,
        alt_text: str | None = None,
        **fields: Any,
    ) -> Message:
        """Create a message with an image (a URL or a ``MediaRef``) and optional text."""
        media = (
            image
            if isinstance(image, MediaRef)
            else MediaRef(
                kind="url", url=image, mime_type=mime_type or mimetypes.guess_type(image)[0]
            )
        )
        blocks: list[ContentBlock] = [TextBlock(text=text)] if text else []
        blocks.append(ImageBlock(media=media, alt_text=alt_text))
        return cls._make(role, blocks, message_id, fields)

    @classmethod
    def multimodal_message(
        cls,
        content: Sequence[ContentBlock],
        role: Role = "user",
        message_id: str | int | None = None,
        **fields: Any,
    ) -> Message:
        """Create a message from explicit blocks of any kinds.

        Inline base64 is checked when its ``MediaRef`` is made (invalid base64
        is refused there). To move large inline media into a media store, pass
        the message to ``tenxgraph.storage.media.offload_message``.
        """
        if "media" in fields:
            raise ConfigError(
                "multimodal_message takes no media store (media=): offload the message with "
                "tenxgraph.storage.media.offload_message(message, store, user_id=...)"
            )
        return cls._make(role, list(content), message_id, fields)

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        text: str | None = None,
        role: Role = "user",
        message_id: str | int | None = None,
        *,
        mime_type: str | None = None,
        max_inline_bytes: int = MAX_INLINE_BYTES,
        media: MediaSink | None = None,
        user_id: str = "default",
        **fields: Any,
    ) -> Message:
        """Create a message holding a local file, with the block kind its MIME type implies.

        The MIME type comes from ``mime_type``, else the file name, else the
        file's leading bytes. Without ``media`` the file is inlined as base64,
        and files above ``max_inline_bytes`` are refused. With ``media`` (a
        media store), files over 64 KiB are streamed into it for ``user_id``
        (never read whole; its ``max_bytes`` and type check apply) and the
        block references them as ``graph://media/{key}``; smaller ones are inlined.
        """
        file = Path(path)
        size = file.stat().st_size
        if media is not None and size > _OFFLOAD_BYTES:
            with file.open("rb") as head:
                detected = (
                    mime_type or mimetypes.guess_type(file.name)[0] or _sniff(head.read(4096))
                )
            media_ref = media.put(file, detected, user_id=user_id, filename=file.name)
            return cls._with_file(
                media_ref, media_ref.mime_type or detected, text, role, message_id, fields
            )
        if size > max_inline_bytes:
            raise ConfigError(
                f"{file} is {size} bytes, above the inline limit of {max_inline_bytes} bytes; "
                "pass a media store (media=...), or upload it and use "
                "MediaRef(kind='url' or 'file_id') instead"
            )
        data = file.read_bytes()
        detected = mime_type or mimetypes.guess_type(file.name)[0] or _sniff(data)
        inline = MediaRef(
            kind="data",
            data_base64=base64.b64encode(data).decode("ascii"),
            mime_type=detected,
            size_bytes=size,
            sha256=hashlib.sha256(data).hexdigest(),
            filename=file.name,
        )
        return cls._with_file(inline, detected, text, role, message_id, fields)

    @classmethod
    def _with_file(
        cls,
        media: MediaRef,
        mime: str,
        text: str | None,
        role: Role,
        message_id: str | int | None,
        fields: dict[str, Any],
    ) -> Message:
        blocks: list[ContentBlock] = [TextBlock(text=text)] if text else []
        blocks.append(_block_for(media, mime))
        return cls._make(role, blocks, message_id, fields)

    @classmethod
    def _make(
        cls,
        role: Role,
        content: list[ContentBlock],
        message_id: str | int | None,
        fields: dict[str, Any],
    ) -> Message:
        if message_id is not None:
            fields["message_id"] = message_id
        return cls(role=role, content=content, **fields)


def _sniff(data: bytes) -> str:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[4:8] == b"ftyp":
        return "video/mp4"
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain"


def _block_for(media: MediaRef, mime: str) -> ContentBlock:
    major = mime.split("/", 1)[0]
    if major == "image":
        return ImageBlock(media=media)
    if major == "audio":
        return AudioBlock(media=media)
    if major == "video":
        return VideoBlock(media=media)
    if major == "text" or mime in _DOCUMENT_TYPES:
        return DocumentBlock(media=media)
    return DataBlock(mime_type=mime, media=media)


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    if isinstance(output, list) and all(isinstance(item, BaseModel) for item in output):
        return "".join(getattr(item, "text", "") or "" for item in output)
    return json.dumps(output, default=str)


MessagesAdapter: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
"""Validates and serializes a whole list of messages in one call."""


def compact_json(message: Message) -> str:
    """``message`` as JSON without the fields at their default values: how stores keep it.

    Validating the text gives back an equal message (the left-out fields get
    the same defaults) at about half the size of ``model_dump_json()`` for a
    typical message (no ``"delta":false``, ``"annotations":[]`` or nulls).
    Always written: each block's ``type`` (the discriminator), ``message_id``
    and ``timestamp`` (their defaults are made anew for every message, so one
    left out would come back different), and a ``parsed_content`` model in
    full (it comes back as a dict, which must hold all its fields). Raises
    ``ValueError`` for what JSON cannot hold (a lone surrogate, an object).

    A message of plain text blocks with every other field at its default (most
    messages a run saves) is written from its attributes: pydantic's
    ``exclude_defaults`` would call the id, timestamp, metadata and annotation
    default factories only to compare, which cost more than the rest of the dump.
    """
    return compact_json_bytes(message).decode()


def compact_json_bytes(message: Message) -> bytes:
    """``compact_json`` as UTF-8 bytes: what a store that keeps bytes holds, no str between."""
    # inf_nan_mode="null": as model_dump_json() does with a NaN put in after validation
    return to_json(compact_data(message), inf_nan_mode="null")


def compact_data(message: Message) -> dict[str, Any]:
    """``compact_json``'s data before it becomes text (a new dict, the caller's to change).

    A store that keeps some members in columns of their own (the SQLite
    checkpointer: the id and timestamp) takes them out of it.
    """
    data = _plain_text_data(message)
    return _compact_data(message) if data is None else data


def _compact_data(message: Message) -> dict[str, Any]:
    """``compact_json``'s data for any message: pydantic's dump without defaults, completed."""
    data = message.model_dump(mode="json", exclude_defaults=True)
    data["message_id"] = message.message_id
    data["timestamp"] = message.timestamp
    data["content"] = _typed(message.content, data["content"])
    if isinstance(message.parsed_content, BaseModel):
        data["parsed_content"] = message.parsed_content.model_dump(mode="json")
    return data


def _plain_text_data(message: Message) -> dict[str, Any] | None:
    """``compact_json``'s data for a message of plain text blocks and defaults, else None.

    Exactly what the general path makes for such a message (same keys, same
    order); anything else (another field set, a block of another kind, a
    subclass) takes the general path.
    """
    fields = message.__dict__
    if not (
        type(message) is Message
        and fields["delta"] is False
        and fields["tools_calls"] is None
        and fields["reasoning"] is None
        and fields["metadata"] == {}
        and fields["usages"] is None
        and fields["raw"] is None
        and fields["parsed_content"] is None
    ):
        return None
    content = []
    for block in fields["content"]:
        if type(block) is not TextBlock or block.annotations:
            return None
        content.append({"type": "text", "text": block.text})
    return {
        "message_id": fields["message_id"],
        "role": fields["role"],
        "content": content,
        "timestamp": fields["timestamp"],
    }


def _typed(blocks: Sequence[ContentBlock], dumped: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``dumped`` (blocks dumped without defaults) with each block's ``type`` put back, first.

    A tool result's output may itself be a list of blocks: those get theirs too.
    """
    typed = []
    for block, data in zip(blocks, dumped, strict=True):
        if isinstance(block, ToolResultBlock) and _holds_blocks(block.output):
            data["output"] = _typed(block.output, data["output"])
        typed.append({"type": block.type, **data})
    return typed


def _holds_blocks(output: Any) -> TypeGuard[list[ContentBlock]]:
    return isinstance(output, list) and bool(output) and isinstance(output[0], BaseModel)
