"""Anthropic's Messages API through the official ``anthropic`` SDK (extra ``anthropic``).

Structured output uses a forced tool: the request gets a tool named
``request.output_schema_name`` whose input schema is the output schema, and
the tool's input comes back as the message text (JSON), for the Agent to
parse. Its arguments stream as text deltas. With other tools present the
model must call one of them or the output tool (``tool_choice`` ``any``).
Anthropic forbids forcing a tool while extended thinking is on: then the
output tool is only offered (``auto``), and an answer given as plain text is
returned as it is, for the Agent's validation (and its one retry).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tenxgraph.core.llm._clients import LoopClients
from tenxgraph.core.llm._convert_anthropic import (
    PROVIDER,
    StreamAccumulator,
    from_wire_content,
    to_wire,
    usage_from_wire,
)
from tenxgraph.core.llm._errors import mentions_context_overflow, status_error, timeout_error
from tenxgraph.core.llm._wire import WireCleaner, provider_metadata
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state.message import Message, new_message_id
from tenxgraph.core.state.message_block import ContentBlock, ReasoningBlock, TextBlock
from tenxgraph.core.state.pairing import repair_pairing
from tenxgraph.core.state.tool_arguments import INVALID_TOOL_ARGS_KEY
from tenxgraph.errors import AuthenticationError, BadRequestError, MissingExtraError, ModelError

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicModel"]

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
        **defaults: Any,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingExtraError("anthropic", "anthropic") from exc
        self.model = model
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
        if request.output_schema is not None:
            tools.append(_output_tool(request))
            if (body.get("thinking") or {}).get("type", "disabled") != "disabled":
                choice = {"type": "auto"}  # thinking forbids forcing a tool
            elif request.tool_choice in ("auto", "required") and request.tools:
                choice = {"type": "any"}
            elif request.tool_choice in ("auto", "required", "none"):
                choice = {"type": "tool", "name": request.output_schema_name}
        if tools:
            params["tools"] = tools
            params["tool_choice"] = choice
        if body:
            params["extra_body"] = body
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Stream the answer: text and thinking deltas, then the complete message."""
        import anthropic

        output_tool = request.output_schema_name if request.output_schema is not None else None
        message_id = new_message_id()
        accumulator = StreamAccumulator()
        cleaner = WireCleaner()
        try:
            client = self._clients.get()
            async with await client.messages.create(**self._params(request), stream=True) as events:
                async for event in events:
                    wire = cleaner.data(event)
                    accumulator.feed(wire)
                    piece = _delta(wire, accumulator, output_tool)
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
        content, opaque = from_wire_content(
            raw.get("content", []), output_tool=output_tool, refused=refused
        )
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


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def _output_tool(request: ModelRequest) -> dict[str, Any]:
    schema = request.output_schema or {}
    name = request.output_schema_name
    if schema.get("type") != "object":
        raise BadRequestError(
            f"{PROVIDER}: output_schema must describe a JSON object (type 'object'), "
            f"got type {schema.get('type')!r}",
            provider=PROVIDER,
        )
    if any(tool.name == name for tool in request.tools):
        raise BadRequestError(
            f"{PROVIDER}: output_schema_name {name!r} is also the name of a tool", provider=PROVIDER
        )
    return {
        "name": name,
        "description": "Give the final answer in this structure.",
        "input_schema": schema,
    }


def _delta(
    event: dict[str, Any], accumulator: StreamAccumulator, output_tool: str | None
) -> ContentBlock | None:
    """The visible piece one stream event adds: text, thinking, or structured-output JSON."""
    if event.get("type") != "content_block_delta":
        return None
    delta = event.get("delta") or {}
    kind = delta.get("type")
    if kind == "text_delta" and delta.get("text"):
        return TextBlock(text=delta["text"])
    if kind == "thinking_delta" and delta.get("thinking"):
        return ReasoningBlock(summary=delta["thinking"])
    in_output = (
        output_tool is not None and accumulator.block(event["index"]).get("name") == output_tool
    )
    if kind == "input_json_delta" and delta.get("partial_json") and in_output:
        return TextBlock(text=delta["partial_json"])
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
