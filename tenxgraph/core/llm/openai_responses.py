"""OpenAI's Responses API through the official ``openai`` SDK (extra ``openai``).

Each call sends the whole conversation as input items (no
``previous_response_id``), so a thread's history stays ours. Structured
output uses ``text.format`` ``json_schema`` (strict only when the schema
forbids additional properties, as strict mode requires); function tools are
sent with ``strict: false`` so any JSON schema is accepted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tenxgraph.core.llm._clients import LoopClients
from tenxgraph.core.llm._convert_openai_responses import (
    OPAQUE_KEY,
    PROVIDER,
    from_wire_output,
    to_wire,
    usage_from_wire,
)
from tenxgraph.core.llm._errors import mentions_context_overflow, status_error
from tenxgraph.core.llm._media_files import file_deleter
from tenxgraph.core.llm._media_rules import OPENAI_RESPONSES_RULES
from tenxgraph.core.llm._openai_errors import map_openai_error
from tenxgraph.core.llm._wire import WireCleaner, json_safe, provider_metadata
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.llm.media import MediaResolver, MediaSource, media_resolver, prepare_media
from tenxgraph.core.llm.openai import _client_options as client_options
from tenxgraph.core.llm.openai import delete_file, upload_file
from tenxgraph.core.state.message import Message, new_message_id
from tenxgraph.core.state.message_block import ContentBlock, ReasoningBlock, TextBlock
from tenxgraph.core.state.pairing import repair_pairing
from tenxgraph.core.state.tool_arguments import INVALID_TOOL_ARGS_KEY
from tenxgraph.errors import ModelError

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIResponsesModel"]

# Error codes a stream reports inside a 200 response (``error`` and ``response.failed``).
_CODE_STATUS = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "context_length_exceeded": 400,
    "invalid_prompt": 400,
}


class OpenAIResponsesModel(ChatModel):
    """A model behind the Responses API. ``defaults`` are request parameters sent on every call.

    The key comes from ``api_key`` or ``OPENAI_API_KEY`` (optional with
    ``base_url``). ``max_retries`` is the SDK's own retry count; use
    ``RetryingModel`` for tenxgraph's retries. The model makes one SDK client
    per event loop it runs on; a ``client`` passed in is used as it is.
    ``media`` (a media store or a ``MediaResolver``) resolves ``graph://media``
    refs: inline, or images and files through the Files API.
    """

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        media: MediaResolver | MediaSource | None = None,
        **defaults: Any,
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.media = media_resolver(media)
        """How ``graph://media`` refs are sent (None: they are refused)."""
        options = {} if client is not None else client_options(api_key, base_url, PROVIDER)
        options.update(timeout=timeout, max_retries=max_retries)

        def make() -> openai.AsyncOpenAI:
            import openai

            return openai.AsyncOpenAI(**options)

        self._clients = LoopClients(make, lambda made: made.close(), given=client)

    async def aclose(self) -> None:
        """Close the client made for the running loop (a client passed in is the caller's)."""
        await self._clients.aclose()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            **self.defaults,
            "model": self.model,
            "input": to_wire(repair_pairing(request.messages)),
            "stream": True,
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": False,
                }
                for tool in request.tools
            ]
            choice = request.tool_choice
            params["tool_choice"] = (
                choice
                if choice in ("auto", "required", "none")
                else {"type": "function", "name": choice}
            )
        if request.output_schema is not None:
            schema = request.output_schema
            params["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": request.output_schema_name,
                    "schema": schema,
                    "strict": schema.get("additionalProperties") is False,
                }
            }
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.max_tokens is not None:
            params["max_output_tokens"] = request.max_tokens
        if request.extra:
            params["extra_body"] = request.extra
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Stream the answer: text and reasoning deltas, then the complete message."""
        import openai

        message_id = new_message_id()
        response: dict[str, Any] | None = None
        cleaner = WireCleaner()
        try:
            client = self._clients.get()
            request = await prepare_media(
                request,
                OPENAI_RESPONSES_RULES,
                self.media,
                upload=lambda *file: upload_file(client, *file),
                delete=file_deleter(self._clients, delete_file),
                endpoint=f"{PROVIDER} {client.base_url}",
            )
            events = await client.responses.create(**self._params(request))
            async for event in events:
                piece = _delta(event, cleaner)
                if piece is not None:
                    yield Message(
                        message_id=message_id, role="assistant", content=[piece], delta=True
                    )
                elif event.type in ("response.completed", "response.incomplete"):
                    response = cleaner.data(event.response)
                elif event.type == "response.failed":
                    error = json_safe(event.response).get("error") or {}
                    raise _coded_error(error.get("code"), error.get("message") or "response failed")
                elif event.type == "error":
                    raise _coded_error(event.code, event.message)
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, PROVIDER) from exc
        if response is None:
            raise ModelError(
                f"{PROVIDER}: the response stream ended before response.completed",
                provider=PROVIDER,
            )
        refused: dict[str, Any] = {}
        content, opaque = from_wire_output(response.get("output") or [], refused)
        metadata: dict[str, Any] = {"status": response.get("status")}
        if response.get("incomplete_details"):
            metadata["incomplete_details"] = response["incomplete_details"]
        if refused:
            metadata[INVALID_TOOL_ARGS_KEY] = refused
        metadata.update(cleaner.metadata())
        yield Message(
            message_id=message_id,
            role="assistant",
            content=content,
            usages=usage_from_wire(response.get("usage") or {}),
            raw=response,
            metadata={**metadata, **provider_metadata(OPAQUE_KEY, opaque)},
        )


def _delta(event: Any, cleaner: WireCleaner) -> ContentBlock | None:
    """The visible piece one stream event adds: output text or reasoning text."""
    if event.type == "response.output_text.delta":
        return TextBlock(text=cleaner.text(event.delta))
    if event.type in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        return ReasoningBlock(summary=cleaner.text(event.delta))
    return None


def _coded_error(code: str | None, message: str) -> ModelError:
    status = _CODE_STATUS.get(code or "", 500 if code is None else 400)
    overflow = mentions_context_overflow(code, message)
    return status_error(status, message, provider=PROVIDER, context_overflow=overflow)
