"""``OpenAIEmbedder``: embeddings through the official ``openai`` SDK (``embeddings.create``).

Works with OpenAI and any OpenAI-compatible server (``base_url``). The
SDK's errors map to tenxgraph's model errors at this boundary, as in the
chat adapter. One client per call: embedding happens once per memory put
and search, where a client's setup is small next to the request.
"""

from __future__ import annotations

from collections.abc import Sequence

from tenxgraph.core.llm._openai_errors import map_openai_error
from tenxgraph.core.llm.openai import _client_options
from tenxgraph.core.state._embedder import Embedder

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder(Embedder):
    """Embeddings from an OpenAI (or compatible) embedding model."""

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dimensions: int = 1536,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        """``dimensions`` is asked of the model (the v3 models shorten their vectors to it)."""
        self.model = model
        self.dimensions = dimensions
        self._options = {
            **_client_options(api_key, base_url, "openai"),
            "timeout": timeout,
            "max_retries": max_retries,
        }

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """One request for all ``texts``; vectors in their order."""
        import openai

        try:
            async with openai.AsyncOpenAI(**self._options) as client:
                response = await client.embeddings.create(
                    model=self.model, input=list(texts), dimensions=self.dimensions
                )
        except openai.OpenAIError as exc:
            raise map_openai_error(exc, "openai") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        return [list(item.embedding) for item in ordered]
