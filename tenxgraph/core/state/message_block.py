"""Typed content blocks: the parts a message is made of.

Every block carries a ``type`` literal, so ``ContentBlock`` is one discriminated
union and a list of blocks serializes and validates in one call. The model is
provider-neutral: adapters in ``tenxgraph.core.llm`` translate to wire formats.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    JsonValue,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema
from typing_extensions import TypeAliasType

from tenxgraph.core.state.json_policy import check_json_data, lone_surrogate, surrogate_text

__all__ = [
    "AnnotationBlock",
    "AnnotationRef",
    "AudioBlock",
    "ContentBlock",
    "DataBlock",
    "DocumentBlock",
    "ErrorBlock",
    "ImageBlock",
    "MediaRef",
    "ReasoningBlock",
    "RemoteToolCallBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "VideoBlock",
]


def check_base64(value: str, field: str) -> None:
    """Raise ``ValueError`` naming ``field`` unless ``value`` is strict base64."""
    try:
        binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError(f"{field} is not valid base64: {exc}") from None


def _valid_text(value: str) -> str:
    if value.isascii():  # most text, at once
        return value
    found = lone_surrogate(value)
    if found is not None:
        raise ValueError(surrogate_text(found))
    return value


class _PythonTextCheck:
    """Checks Python input for lone surrogates; JSON input cannot hold one (no cost there)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        schema = handler(source)
        return core_schema.json_or_python_schema(
            json_schema=schema,
            python_schema=core_schema.no_info_after_validator_function(_valid_text, schema),
        )


Text = Annotated[str, _PythonTextCheck()]
"""A ``str`` field that refuses lone surrogates."""


def json_data(value: Any, info: ValidationInfo) -> Any:
    """Validator body for JSON-data fields: ``check_json_data`` naming the field."""
    if (
        value is None
        or isinstance(value, bool | int)
        or (isinstance(value, str) and info.mode == "json")
    ):
        return value
    if isinstance(value, BaseModel) or (
        isinstance(value, list) and value and isinstance(value[0], BaseModel)
    ):
        return value  # blocks or media: validated themselves
    check_json_data(value, str(info.field_name), from_python=info.mode == "python")
    return value


def _one_error(schema: core_schema.CoreSchema) -> core_schema.CoreSchema:
    """Make a union of JSON types report one error, the only one JSON input can cause.

    In JSON input only NaN or an infinity can fail such a union; without this a
    refused value would get one error per type it is not.
    """
    union = cast("dict[str, Any]", schema["schema"] if schema["type"] == "nullable" else schema)
    if union["type"] == "union":
        union["custom_error_type"] = "finite_json"
        union["custom_error_message"] = "NaN or infinity, which JSON data cannot hold"
    return schema


class _NotFinite:
    """Applies ``_one_error`` to the type it annotates."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return _one_error(handler(source))


if TYPE_CHECKING:
    FiniteJson: TypeAlias = Any
else:
    FiniteJson = TypeAliasType(
        "FiniteJson",
        Annotated[
            Union[  # noqa: UP007 - a recursive alias needs the string forward references
                str, int, FiniteFloat, bool, dict[str, "FiniteJson"], list["FiniteJson"], None
            ],
            _NotFinite(),
        ],
    )
"""JSON data as pydantic-core checks it for JSON input: any JSON value but NaN and infinities
(which the parser accepts as ``NaN`` or ``1e999``). Each value keeps its JSON type."""


class JsonChecked:
    """Marks a field holding JSON data: refused are values JSON cannot hold, naming where.

    Python input goes through ``check`` (``json_data`` by default: NaN, infinities,
    lone surrogates, non-JSON types, too deep). JSON input can only be wrong by
    NaN or an infinity (the parser refuses the rest), so it is validated as
    ``json_type``, in which every number must be finite: pydantic-core checks
    it without a Python call, which is what makes loading stored messages cheap.
    The JSON schema and the dumps stay the declared type's.
    """

    def __init__(
        self, json_type: Any, check: Callable[[Any, ValidationInfo], Any] = json_data
    ) -> None:
        """``json_type`` is the field's type for JSON input, with ``FiniteJson`` for its data."""
        self.json_type = json_type
        self.check = check

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Python input: the field's schema then ``check``; JSON input: ``json_type``."""
        return core_schema.json_or_python_schema(
            json_schema=_one_error(handler.generate_schema(self.json_type)),
            python_schema=core_schema.with_info_after_validator_function(
                self.check, handler(source)
            ),
            # Dumped by what each value is (a model by its own fields, a tuple as an array),
            # as the declared type does; the stricter ``json_type`` would warn about some.
            serialization=core_schema.simple_ser_schema("any"),
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The schema of the declared type, not of ``json_type``."""
        return handler(schema["python_schema"])


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MediaRef(_Block):
    """A reference to binary media: by URL, by provider file id, or inline base64."""

    kind: Literal["url", "file_id", "data"]
    """Which reference strategy is used; the matching field must be set."""
    url: Text | None = None
    """HTTP(S) URL, or ``graph://media/{key}`` for offloaded media."""
    file_id: Text | None = None
    """Provider-managed file id (OpenAI Files API, Gemini File API)."""
    data_base64: str | None = None
    """Base64-encoded content; only for small payloads."""
    mime_type: Text | None = None
    """MIME type, e.g. ``image/jpeg``."""
    size_bytes: int | None = None
    """File size hint."""
    sha256: Text | None = None
    """Content hash for integrity checks."""
    filename: Text | None = None
    """Original file name."""
    width: int | None = None
    """Image width in pixels."""
    height: int | None = None
    """Image height in pixels."""
    duration_ms: int | None = None
    """Audio or video duration in milliseconds."""
    page: int | None = None
    """Page number, for documents."""

    @model_validator(mode="after")
    def _kind_field_present(self) -> MediaRef:
        required = {"url": "url", "file_id": "file_id", "data": "data_base64"}[self.kind]
        value = getattr(self, required)
        if not value:
            raise ValueError(f"MediaRef(kind={self.kind!r}) requires the field {required!r}")
        if self.kind == "data":
            check_base64(value, "data_base64")
        return self


class AnnotationRef(_Block):
    """A citation target: a URL, a file, a page."""

    url: Text | None = None
    """Source URL."""
    file_id: Text | None = None
    """File reference."""
    page: int | None = None
    """Page number."""
    index: int | None = None
    """Index position in the source."""
    title: Text | None = None
    """Display title."""


class TextBlock(_Block):
    """Plain text, with optional citations."""

    type: Literal["text"] = "text"
    """Discriminator."""
    text: Text
    """The text content."""
    annotations: list[AnnotationRef] = Field(default_factory=list)
    """Citations or links embedded in the text."""


class ImageBlock(_Block):
    """An image."""

    type: Literal["image"] = "image"
    """Discriminator."""
    media: MediaRef
    """Reference to the image."""
    alt_text: Text | None = None
    """Accessibility text."""
    bbox: list[float] | None = None
    """Bounding box ``[x1, y1, x2, y2]``."""


class AudioBlock(_Block):
    """An audio clip."""

    type: Literal["audio"] = "audio"
    """Discriminator."""
    media: MediaRef
    """Reference to the audio."""
    transcript: Text | None = None
    """Transcript of the audio."""
    sample_rate: int | None = None
    """Sample rate in Hz."""
    channels: int | None = None
    """Number of audio channels."""


class VideoBlock(_Block):
    """A video clip."""

    type: Literal["video"] = "video"
    """Discriminator."""
    media: MediaRef
    """Reference to the video."""
    thumbnail: MediaRef | None = None
    """Thumbnail image reference."""


class DocumentBlock(_Block):
    """A document file (PDF, text, office formats)."""

    type: Literal["document"] = "document"
    """Discriminator."""
    media: MediaRef
    """Reference to the document file."""
    text: Text | None = None
    """Extracted full text."""
    pages: list[int] | None = None
    """Relevant page numbers."""
    excerpt: Text | None = None
    """Short excerpt or preview."""


class DataBlock(_Block):
    """Arbitrary typed data, inline or by reference."""

    type: Literal["data"] = "data"
    """Discriminator."""
    mime_type: Text
    """MIME type of the data."""
    data_base64: str | None = None
    """Base64-encoded payload."""
    media: MediaRef | None = None
    """External media reference."""

    @model_validator(mode="after")
    def _valid_base64(self) -> DataBlock:
        if self.data_base64 is not None:
            check_base64(self.data_base64, "data_base64")
        return self


class ToolCallBlock(_Block):
    """The model asks for a tool to be run; ``id`` links it to its result."""

    type: Literal["tool_call"] = "tool_call"
    """Discriminator."""
    id: Text = Field(min_length=1)
    """Tool call id, matched by ``ToolResultBlock.call_id``."""
    name: Text
    """Tool function name."""
    args: Annotated[dict[str, Any], JsonChecked(dict[str, FiniteJson])] = Field(
        default_factory=dict
    )
    """Arguments."""
    tool_type: Text | None = None
    """Optional type hint, e.g. ``web_search`` or ``computer_use``."""


class RemoteToolCallBlock(_Block):
    """A tool call to be run by a remote client (e.g. in the browser)."""

    type: Literal["remote_tool_call"] = "remote_tool_call"
    """Discriminator."""
    id: Text = Field(min_length=1)
    """Call id."""
    name: Text
    """Configured remote tool name with a matching client handler."""
    args: Annotated[dict[str, Any], JsonChecked(dict[str, FiniteJson])] = Field(
        default_factory=dict
    )
    """Arguments."""
    tool_type: Literal["remote"] = "remote"
    """Always ``remote``."""


class ToolResultBlock(_Block):
    """The result of running a tool call."""

    type: Literal["tool_result"] = "tool_result"
    """Discriminator."""
    call_id: Text = Field(min_length=1)
    """The ``ToolCallBlock.id`` this answers."""
    output: Annotated[
        MediaRef | list[ContentBlock] | JsonValue,
        JsonChecked(MediaRef | list[ContentBlock] | FiniteJson),
    ] = None
    """What the tool returned: a string, JSON data, a ``MediaRef`` or a list of blocks."""
    is_error: bool = False
    """True when the tool failed."""
    status: Literal["completed", "failed"] | None = None
    """Status of the tool call."""


class ReasoningBlock(_Block):
    """The model's thinking trace, from reasoning models."""

    type: Literal["reasoning"] = "reasoning"
    """Discriminator."""
    summary: Text
    """Summary of the reasoning."""
    details: list[Text] | None = None
    """Detailed reasoning steps."""


class AnnotationBlock(_Block):
    """A structured citation or note attached to a response."""

    type: Literal["annotation"] = "annotation"
    """Discriminator."""
    kind: Literal["citation", "note"] = "citation"
    """Kind of annotation."""
    refs: list[AnnotationRef] = Field(default_factory=list)
    """Annotation references."""
    spans: list[tuple[int, int]] | None = None
    """Spans of the text covered by the annotation."""


class ErrorBlock(_Block):
    """An error that occurred during execution."""

    type: Literal["error"] = "error"
    """Discriminator."""
    message: Text
    """Error message."""
    code: Text | None = None
    """Optional error code."""
    data: Annotated[dict[str, Any] | None, JsonChecked(dict[str, FiniteJson] | None)] = None
    """Additional error data."""


ContentBlock: TypeAlias = Annotated[
    TextBlock
    | ImageBlock
    | AudioBlock
    | VideoBlock
    | DocumentBlock
    | DataBlock
    | ToolCallBlock
    | RemoteToolCallBlock
    | ToolResultBlock
    | ReasoningBlock
    | AnnotationBlock
    | ErrorBlock,
    Field(discriminator="type"),
]
"""Any content block, discriminated by its ``type`` field."""

ToolResultBlock.model_rebuild()
