"""Gemini through the official ``google-genai`` SDK (extra ``google``).

Structured output sets ``response_mime_type="application/json"`` and
``response_json_schema``; the answer text is the JSON. Gemini before 3 cannot
combine that with function calling, so for those models
``supports_output_schema(with_tools=True)`` is False and an Agent asks for
structured output through a tool instead. Tools are declared
with ``parameters_json_schema``, so any JSON schema is accepted as it is.
To use another endpoint (a proxy, a local server), pass ``base_url``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

from tenxgraph.core.llm._clients import LoopClients
from tenxgraph.core.llm._convert_google import (
    PROVIDER,
    from_wire_parts,
    merge_part,
    to_wire,
    usage_from_wire,
)
from tenxgraph.core.llm._errors import mentions_context_overflow, status_error, timeout_error
from tenxgraph.core.llm._google_files import delete_file, upload_file
from tenxgraph.core.llm._media_files import file_deleter
from tenxgraph.core.llm._media_rules import GOOGLE_RULES
from tenxgraph.core.llm._wire import WireCleaner, provider_metadata
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.llm.media import (
    MediaResolver,
    MediaSource,
    media_resolver,
    prepare_media,
)
from tenxgraph.core.state.message import Message, new_message_id
from tenxgraph.core.state.message_block import ContentBlock, ReasoningBlock, TextBlock
from tenxgraph.core.state.pairing import repair_pairing
from tenxgraph.core.state.tool_arguments import INVALID_TOOL_ARGS_KEY
from tenxgraph.errors import AuthenticationError, MissingExtraError, ModelError

if TYPE_CHECKING:
    from google import genai

__all__ = ["GoogleModel"]

_GEMINI_VERSION = re.compile(r"^(?:models/)?gemini-(\d+)")

_TRANSPORT_ERRORS = {
    ("httpx", "TransportError"),
    ("httpx2", "TransportError"),
    ("aiohttp", "ClientConnectionError"),
}


class GoogleModel(ChatModel):
    """A Gemini model. ``defaults`` are ``GenerateContentConfig`` fields sent on every call.

    For example ``GoogleModel("gemini-2.5-flash", thinking_config={"include_thoughts": True})``.
    The key comes from ``api_key`` or ``GEMINI_API_KEY``/``GOOGLE_API_KEY``.
    ``max_retries`` is the SDK's own retry count (``timeout`` is in seconds);
    use ``RetryingModel`` for tenxgraph's retries. The model makes one SDK
    client per event loop it runs on; a ``client`` passed in is used as it is.
    ``media`` (a media store or a ``MediaResolver``) resolves ``graph://media``
    refs: inline, or through the Gemini Files API (its file URI is sent).
    """

    provider = PROVIDER

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: genai.Client | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        media: MediaResolver | MediaSource | None = None,
        **defaults: Any,
    ) -> None:
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:
            raise MissingExtraError("google-genai", "google") from exc
        self.model = model
        self.defaults = defaults
        self.media = media_resolver(media)
        """How ``graph://media`` refs are sent (None: they are refused)."""
        self._endpoint = f"{PROVIDER} {base_url or 'default'}"
        options = types.HttpOptions(
            base_url=base_url,
            api_version="v1beta" if base_url else None,
            timeout=int(timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=max_retries + 1),
        )

        def make() -> genai.Client:
            try:
                return genai.Client(api_key=api_key, http_options=options)
            except ValueError as exc:  # no key given and none in the environment
                raise AuthenticationError(f"{PROVIDER}: {exc}", provider=PROVIDER) from exc

        if client is None:
            make().close()  # fail now, not at the first call, when no key is known
        self._clients = LoopClients(make, lambda made: made.aio.aclose(), given=client)

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        """Always alone; next to tools only from Gemini 3 (names this adapter cannot date: yes)."""
        if not with_tools:
            return True
        version = _GEMINI_VERSION.match(self.model)
        return version is None or int(version.group(1)) >= 3

    async def aclose(self) -> None:
        """Close the client made for the running loop (a client passed in is the caller's)."""
        await self._clients.aclose()

    def _config(self, request: ModelRequest, system: list[dict[str, Any]]) -> dict[str, Any]:
        config: dict[str, Any] = {**self.defaults, **request.extra}
        if system:
            config["system_instruction"] = {"parts": system}
        if request.tools:
            declarations = [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters_json_schema": t.parameters,
                }
                for t in request.tools
            ]
            config["tools"] = [{"function_declarations": declarations}]
            config["tool_config"] = {
                "function_calling_config": _calling_config(request.tool_choice)
            }
        if request.output_schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = request.output_schema
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["max_output_tokens"] = request.max_tokens
        return config

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Stream the answer: text and thought deltas, then the complete message."""
        from google.genai import errors, types

        message_id = new_message_id()
        parts: list[dict[str, Any]] = []
        last: dict[str, Any] = {}
        candidate: dict[str, Any] = {}
        citations: list[dict[str, Any]] = []  # each chunk cites the text it carries
        cleaner = WireCleaner()
        try:
            client = self._clients.get()
            request = await prepare_media(
                request,
                GOOGLE_RULES,
                self.media,
                upload=lambda *file: upload_file(
                    client, *file, ready_timeout=self.media.ready_timeout if self.media else 0
                ),
                delete=file_deleter(self._clients, delete_file),
                endpoint=self._endpoint,
            )
            system, contents = to_wire(repair_pairing(request.messages))
            config = self._config(request, system)
            chunks = await client.aio.models.generate_content_stream(
                model=self.model,
                contents=cast(Any, contents),  # plain dicts: the SDK validates them as Content
                config=types.GenerateContentConfig.model_validate(config),
            )
            async for chunk in chunks:
                last = cleaner.data(chunk)
                last.pop("sdk_http_response", None)  # transport headers, not the answer
                candidates = last.get("candidates") or [{}]
                candidate = {**candidate, **candidates[0]}
                cited = candidates[0].get("citation_metadata") or {}
                citations.extend(cited.get("citations") or [])
                for part in (candidates[0].get("content") or {}).get("parts") or []:
                    merge_part(parts, part)
                    piece = _delta(part)
                    if piece is not None:
                        yield Message(
                            message_id=message_id, role="assistant", content=[piece], delta=True
                        )
        except errors.APIError as exc:
            raise _model_error(exc) from exc
        except Exception as exc:
            if _is_transport_error(exc):
                raise timeout_error(str(exc) or type(exc).__name__, provider=PROVIDER) from exc
            raise
        candidate["content"] = {"role": "model", "parts": parts}
        if citations:
            candidate["citation_metadata"] = {"citations": citations}
        raw = {**last, "candidates": [candidate]}
        refused: dict[str, Any] = {}
        content, opaque = from_wire_parts(parts, candidate, refused)
        yield Message(
            message_id=message_id,
            role="assistant",
            content=content,
            usages=usage_from_wire(last.get("usage_metadata") or {}),
            raw=raw,
            metadata={
                "finish_reason": candidate.get("finish_reason"),
                **(
                    {"prompt_feedback": last["prompt_feedback"]}
                    if "prompt_feedback" in last
                    else {}
                ),
                **provider_metadata(PROVIDER, opaque),
                **({INVALID_TOOL_ARGS_KEY: refused} if refused else {}),
                **cleaner.metadata(),
            },
        )


def _calling_config(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"mode": choice.upper()}
    if choice == "required":
        return {"mode": "ANY"}
    return {"mode": "ANY", "allowed_function_names": [choice]}


def _delta(part: dict[str, Any]) -> ContentBlock | None:
    """The visible piece a streamed part adds: answer text or thought text."""
    text = part.get("text")
    if not text:
        return None
    return ReasoningBlock(summary=text) if part.get("thought") else TextBlock(text=text)


def _is_transport_error(exc: Exception) -> bool:
    """True for the HTTP library's connection and timeout errors, whichever one the SDK uses."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    return any(
        (cls.__module__.split(".")[0], cls.__name__) in _TRANSPORT_ERRORS
        for cls in type(exc).__mro__
    )


def _model_error(exc: Any) -> ModelError:
    status = exc.code if isinstance(exc.code, int) else None
    message = str(exc.message or exc)
    overflow = status in (400, 413) and mentions_context_overflow(message)
    return status_error(status, message, provider=PROVIDER, context_overflow=overflow)
