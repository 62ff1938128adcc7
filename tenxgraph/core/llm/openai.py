"""OpenAI Chat Completions, and any server that speaks it (vLLM, Ollama, llama.cpp's server)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any

from tenxgraph.core.llm._clients import LoopClients
from tenxgraph.core.llm._convert_openai import ChatStreamAccumulator, chat_params
from tenxgraph.core.llm._media_files import file_deleter
from tenxgraph.core.llm._media_rules import OPENAI_CHAT_RULES
from tenxgraph.core.llm._openai_errors import map_openai_error
from tenxgraph.core.llm._wire import WireCleaner
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.llm.media import (
    MediaResolver,
    MediaSource,
    ProviderFile,
    media_resolver,
    prepare_media,
)
from tenxgraph.core.state.message import Message
from tenxgraph.errors import AuthenticationError, MissingExtraError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIChatModel"]

_PLACEHOLDER_KEY = "not-needed"
"""Sent to self-hosted servers that need no key (the SDK insists on one)."""


class OpenAIChatModel(ChatModel):
    """A Chat Completions model, streamed.

    Without ``base_url`` it talks to OpenAI (key from ``api_key`` or
    ``OPENAI_API_KEY``). With ``base_url`` it talks to any OpenAI-compatible
    server; the key may then be omitted. ``defaults`` are request parameters
    sent on every call (``top_p=0.9``, ``seed=1``...); a request's own fields
    and ``ModelRequest.extra`` override them. ``max_retries`` is the SDK's own
    retry count; use ``RetryingModel`` for tenxgraph's retries. ``media`` (a
    media store or a ``MediaResolver``) resolves ``graph://media`` refs:
    images and audio inline, documents inline or through the Files API (on
    another server than OpenAI's, only with ``send="upload"``).

    An HTTP client's connections belong to one event loop, so the model makes
    one client per loop it is used on (two ``asyncio.run`` calls work). A
    ``client`` passed in is used as it is, on the caller's loop.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncOpenAI | None = None,
        provider: str = "openai",
        timeout: float = 120.0,
        max_retries: int = 2,
        stream_usage: bool = True,
        media: MediaResolver | MediaSource | None = None,
        **defaults: Any,
    ) -> None:
        self.model = model
        self.provider = provider
        self.media = media_resolver(media)
        """How ``graph://media`` refs are sent (None: they are refused)."""
        self._media_rules = replace(OPENAI_CHAT_RULES, provider=provider)
        self.defaults = defaults
        self.stream_usage = stream_usage
        """Ask for usage in the stream (``stream_options.include_usage``)."""
        official = base_url is None or "api.openai.com" in base_url
        self._max_tokens_key = "max_completion_tokens" if official else "max_tokens"
        self._files_api = official
        """Whether ``send="auto"`` may upload: other servers seldom have OpenAI's Files API."""
        options = {} if client is not None else _client_options(api_key, base_url, provider)
        options.update(timeout=timeout, max_retries=max_retries)

        def make() -> AsyncOpenAI:
            import openai

            return openai.AsyncOpenAI(**options)

        async def close(sdk_client: AsyncOpenAI) -> None:
            await sdk_client.close()

        self._clients = LoopClients(make, close, given=client)

    async def aclose(self) -> None:
        """Close the client made for the running loop (a client passed in is the caller's)."""
        await self._clients.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Stream one completion: text and reasoning deltas, then the complete message."""
        import openai

        accumulator = ChatStreamAccumulator()
        cleaner = WireCleaner()
        try:
            client = self._clients.get()
            request = await prepare_media(
                request,
                self._media_rules,
                self.media,
                upload=(lambda *file: upload_file(client, *file)) if self._may_upload() else None,
                delete=file_deleter(self._clients, delete_file),
                endpoint=f"{self.provider} {client.base_url}",
            )
            params = chat_params(
                request,
                provider=self.provider,
                defaults=self.defaults,
                max_tokens_key=self._max_tokens_key,
            )
            params["model"] = self.model
            params["stream"] = True
            if self.stream_usage:
                params.setdefault("stream_options", {"include_usage": True})
            async with await client.chat.completions.create(**params) as chunks:
                async for chunk in chunks:
                    for delta in accumulator.feed(cleaner.data(chunk)):
                        yield delta
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, self.provider) from exc
        final = accumulator.message()
        final.metadata.update(cleaner.metadata())
        yield final

    def _may_upload(self) -> bool:
        """OpenAI's own API, or a server the user said has a Files API (``send="upload"``)."""
        return self._files_api or (self.media is not None and self.media.send == "upload")


async def upload_file(
    client: AsyncOpenAI, data: IO[bytes], mime_type: str, name: str
) -> ProviderFile:
    """Upload media through OpenAI's Files API (purpose ``user_data``, for model inputs)."""
    created = await client.files.create(file=(name, data, mime_type), purpose="user_data")
    expires = getattr(created, "expires_at", None)
    return ProviderFile(created.id, float(expires) if expires else None)


async def delete_file(client: AsyncOpenAI, file_id: str) -> None:
    """Delete an uploaded file (when the media it holds is deleted)."""
    await client.files.delete(file_id)


def _client_options(api_key: str | None, base_url: str | None, provider: str) -> dict[str, Any]:
    """Check the SDK is installed and a key is known; return the client arguments.

    Shared with the Responses adapter, so both check keys the same way.
    """
    if importlib.util.find_spec("openai") is None:
        raise MissingExtraError("openai", "openai")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if key is None and base_url is not None:
        key = _PLACEHOLDER_KEY
    if key is None:
        raise AuthenticationError(
            f"{provider}: no API key: pass api_key= or set OPENAI_API_KEY", provider=provider
        )
    return {"api_key": key, "base_url": base_url}
