"""Anthropic's Messages API through the official ``anthropic`` SDK (extra ``anthropic``).

Structured output is Anthropic's own: ``output_config.format`` holds the JSON
schema (made strict by the SDK's ``transform_schema`` where the SDK has it:
objects closed, unsupported bounds moved into descriptions), and the answer
is JSON text. Claude models before 4.5 (Opus 4.1 apart) do not have it:
``supports_output_schema`` says so, and an Agent asks them through a tool
instead. Anthropic refuses a forced tool choice while extended thinking is
on, so then ``required`` or a named tool is sent as ``auto``.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from typing import IO, TYPE_CHECKING, Any

from tenxgraph.core.llm._clients import LoopClients
from tenxgraph.core.llm._convert_anthropic import (
    PROVIDER,
    StreamAccumulator,
    from_wire_content,
    to_wire,
    usage_from_wire,
)
from tenxgraph.core.llm._errors import mentions_context_overflow, status_error, timeout_error
from tenxgraph.core.llm._media_files import file_deleter
from tenxgraph.core.llm._media_rules import ANTHROPIC_RULES
from tenxgraph.core.llm._wire import WireCleaner, provider_metadata
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.llm.media import (
    MediaResolver,
    MediaSource,
    ProviderFile,
    media_resolver,
    prepare_media,
)
from tenxgraph.core.state.message import Message, new_message_id
from tenxgraph.core.state.message_block import ContentBlock, ReasoningBlock, TextBlock
from tenxgraph.core.state.pairing import repair_pairing
from tenxgraph.core.state.tool_arguments import INVALID_TOOL_ARGS_KEY
from tenxgraph.errors import AuthenticationError, MissingExtraError, ModelError

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicModel"]

_OLD_FAMILY = re.compile(r"^claude-(?:instant|[0-3])(?:\b|[-.])")
_VERSION = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2})(?!\d))?")

# Error types a stream can report after its HTTP status was already 200.
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicModel(ChatModel):
    """A Claude model. ``defaults`` are request parameters sent on every call (e.g. ``thinking``).

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` (optional with
    ``base_url``). ``max_retries`` is the SDK's own retry count; use
    ``RetryingModel`` for tenxgraph's retries. The model makes one SDK client
    per event loop it runs on; a ``client`` passed in is used as it is.
    ``media`` (a media store or a ``MediaResolver``) resolves ``graph://media``
    refs: inline, or images and PDFs through the Files API.
    """

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        max_tokens: int = 1024,
        timeout: float = 600.0,
        max_retries: int = 2,
        media: MediaResolver | MediaSource | None = None,
        **defaults: Any,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingExtraError("anthropic", "anthropic") from exc
        self.model = model
        self.media = media_resolver(media)
        """How ``graph://media`` refs are sent (None: they are refused)."""
        self.max_tokens = max_tokens
        self.defaults = defaults
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if client is None and key is None and base_url is None:
            raise AuthenticationError(
                f"{PROVIDER}: no API key: pass api_key= or set ANTHROPIC_API_KEY",
                provider=PROVIDER,
            )
        self._clients = LoopClients(
            lambda: anthropic.AsyncAnthropic(
                api_key=key or "not-needed",
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
            ),
            lambda made: made.close(),
            given=client,
        )

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Claude 4.5 and later (and Opus 4.1) have structured output, with tools or without."""
        return supports_structured_output(self.model)

    async def aclose(self) -> None:
        """Close the client made for the running loop (a client passed in is the caller's)."""
        await self._clients.aclose()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = to_wire(repair_pairing(request.messages))
        body: dict[str, Any] = dict(self.defaults)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(request.extra)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        choice = _tool_choice(request.tool_choice)
        if choice["type"] in ("any", "tool") and _thinking(body):
            choice = {"type": "auto"}  # Anthropic refuses a forced tool while thinking
        if request.output_schema is not None:
            config = body.get("output_config")
            body["output_config"] = {
                **(config if isinstance(config, dict) else {}),
                "format": {"type": "json_schema", "schema": _strict(request.output_schema)},
            }
        if tools:
            params["tools"] = tools
            params["tool_choice"] = choice
        if body:
            params["extra_body"] = body
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Stream the answer: text and thinking deltas, then the complete message."""
        import anthropic

        message_id = new_message_id()
        accumulator = StreamAccumulator()
        cleaner = WireCleaner()
        try:
            client = self._clients.get()
            request = await prepare_media(
                request,
                ANTHROPIC_RULES,
                self.media,
                upload=lambda *file: _upload(client, *file),
                delete=file_deleter(self._clients, _delete),
                endpoint=f"{PROVIDER} {client.base_url}",
            )
            async with await client.messages.create(**self._params(request), stream=True) as events:
                async for event in events:
                    wire = cleaner.data(event)
                    accumulator.feed(wire)
                    piece = _delta(wire)
                    if piece is not None:
                        yield Message(
                            message_id=message_id, role="assistant", content=[piece], delta=True
                        )
        except anthropic.APIStatusError as exc:
            raise _model_error(exc) from exc
        except anthropic.APIConnectionError as exc:  # includes APITimeoutError
            raise timeout_error(str(exc), provider=PROVIDER) from exc
        raw = accumulator.response()
        refused: dict[str, Any] = {}
        content, opaque = from_wire_content(raw.get("content", []), refused=refused)
        metadata = {
            "stop_reason": raw.get("stop_reason"),
            **provider_metadata(PROVIDER, opaque),
            **cleaner.metadata(),
        }
        if refused:
            metadata[INVALID_TOOL_ARGS_KEY] = refused
        yield Message(
            message_id=message_id,
            role="assistant",
            content=content,
            usages=usage_from_wire(raw.get("usage", {})),
            raw=raw,
            metadata=metadata,
        )


async def _upload(
    client: anthropic.AsyncAnthropic, data: IO[bytes], mime_type: str, name: str
) -> ProviderFile:
    """Upload media through Anthropic's Files API (``client.files``, in SDKs that have it)."""
    files = getattr(client, "files", None)
    if files is None:
        raise ModelError(
            f"{PROVIDER}: this anthropic SDK has no client.files; upgrade it, or send media "
            "inline (MediaResolver(store, send='inline'))",
            provider=PROVIDER,
        )
    made = await files.upload(file=(name, data, mime_type))
    expires = getattr(made, "expires_at", None)
    return ProviderFile(made.id, expires.timestamp() if expires is not None else None)


async def _delete(client: anthropic.AsyncAnthropic, file_id: str) -> None:
    """Delete an uploaded file (when the media it holds is deleted)."""
    await client.files.delete(file_id)


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def _thinking(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type", "disabled") != "disabled"


def supports_structured_output(model: str) -> bool:
    """Whether the Claude model named ``model`` has structured output: 4.5 and later, Opus 4.1.

    Names this adapter cannot date (aliases of newer models) count as having it.
    """
    if _OLD_FAMILY.match(model):
        return False
    version = _VERSION.match(model)
    if version is None:
        return True
    family, major, minor = version.group(1), int(version.group(2)), version.group(3)
    if major != 4:
        return major > 4
    number = int(minor) if minor is not None else 0
    return number >= 5 or (family == "opus" and number >= 1)


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema in the form Anthropic accepts, by the SDK's own transform when it has one."""
    import anthropic

    transform = getattr(anthropic, "transform_schema", None)
    if transform is None:
        return schema
    try:
        return dict(transform(schema))
    except (ValueError, TypeError, AssertionError):  # a shape the transform does not know
        return schema


def _delta(event: dict[str, Any]) -> ContentBlock | None:
    """The visible piece one stream event adds: text or thinking."""
    if event.get("type") != "content_block_delta":
        return None
    delta = event.get("delta") or {}
    kind = delta.get("type")
    if kind == "text_delta" and delta.get("text"):
        return TextBlock(text=delta["text"])
    if kind == "thinking_delta" and delta.get("thinking"):
        return ReasoningBlock(summary=delta["thinking"])
    return None


def _model_error(exc: anthropic.APIStatusError) -> ModelError:
    status = exc.status_code
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if not isinstance(error, dict):
        error = {}
    message = str(error.get("message") or exc.message)
    if status == 200:  # an error event in the middle of a stream
        status = _ERROR_TYPE_STATUS.get(str(error.get("type")), 500)
    overflow = status in (400, 413) and mentions_context_overflow(message)
    return status_error(status, message, provider=PROVIDER, context_overflow=overflow)
