"""``GeminiEmbedder``: embeddings through the official ``google-genai`` SDK (``embed_content``).

The SDK's API errors map to tenxgraph's model errors at this boundary, as
in the chat adapter. One client per call (see ``OpenAIEmbedder``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tenxgraph.core.llm._errors import status_error
from tenxgraph.core.state._embedder import Embedder
from tenxgraph.errors import AuthenticationError, MissingExtraError

__all__ = ["GeminiEmbedder"]

PROVIDER = "google"


class GeminiEmbedder(Embedder):
    """Embeddings from a Gemini embedding model."""

    def __init__(
        self,
        model: str = "gemini-embedding-001",
        *,
        dimensions: int = 768,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        """``dimensions`` is asked of the model (``output_dimensionality``)."""
        try:
            from google.genai import types
        except ImportError as exc:
            raise MissingExtraError("google-genai", "google") from exc
        self.model = model
        self.dimensions = dimensions
        self._api_key = api_key
        self._http = types.HttpOptions(
            base_url=base_url,
            api_version="v1beta" if base_url else None,
            timeout=int(timeout * 1000),
        )

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """One request for all ``texts``; vectors in their order."""
        from google import genai
        from google.genai import errors, types

        try:
            client = genai.Client(api_key=self._api_key, http_options=self._http)
        except ValueError as exc:  # no key given and none in the environment
            raise AuthenticationError(f"{PROVIDER}: {exc}", provider=PROVIDER) from exc
        try:
            response = await client.aio.models.embed_content(
                model=self.model,
                contents=list(texts),  # type: ignore[arg-type]
                config=types.EmbedContentConfig(output_dimensionality=self.dimensions),
            )
        except errors.APIError as exc:
            raise _model_error(exc) from exc
        finally:
            await client.aio.aclose()
        return [list(item.values or []) for item in response.embeddings or []]


def _model_error(exc: Any) -> Exception:
    status = exc.code if isinstance(exc.code, int) else None
    return status_error(status, str(exc.message or exc), provider=PROVIDER)
