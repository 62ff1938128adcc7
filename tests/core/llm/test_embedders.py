"""OpenAI and Gemini embedders through the official SDKs, against the local replay server."""

from __future__ import annotations

import pytest

from tenxgraph.core.llm.google_embedder import GeminiEmbedder
from tenxgraph.core.llm.openai_embedder import OpenAIEmbedder
from tenxgraph.errors import AuthenticationError, RateLimitError
from tenxgraph.storage.longterm import InMemoryStore
from tenxgraph.testing import ReplayServer


def openai_body(*vectors: list[float]) -> dict[str, object]:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {
        "object": "list",
        "data": list(reversed(data)),  # the SDK's order is by index, not by position
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 4, "total_tokens": 4},
    }


async def test_openai_embeds_a_batch_in_order() -> None:
    with ReplayServer() as server:
        server.reply(openai_body([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]))
        embedder = OpenAIEmbedder(dimensions=3, base_url=f"{server.url}/v1", max_retries=0)
        vectors = await embedder.aembed(["tea", "coffee"])
        assert vectors == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
        sent = server.requests[0]
        assert sent.path == "/v1/embeddings"
        assert sent.body["model"] == "text-embedding-3-small"
        assert sent.body["input"] == ["tea", "coffee"] and sent.body["dimensions"] == 3


async def test_openai_errors_are_library_errors() -> None:
    with ReplayServer() as server:
        server.reply({"error": {"message": "slow down", "type": "rate_limit"}}, status=429)
        embedder = OpenAIEmbedder(dimensions=3, base_url=f"{server.url}/v1", max_retries=0)
        with pytest.raises(RateLimitError, match="slow down"):
            await embedder.aembed(["tea"])


async def test_a_store_searches_with_openai_vectors() -> None:
    with ReplayServer() as server:
        embedder = OpenAIEmbedder(dimensions=2, base_url=f"{server.url}/v1", max_retries=0)
        store = InMemoryStore(embedder=embedder)
        server.reply(openai_body([1.0, 0.0]))
        await store.aput(("m",), "tea", {"text": "green tea"})
        server.reply(openai_body([0.0, 1.0]))
        await store.aput(("m",), "car", {"text": "red car"})
        server.reply(openai_body([0.9, 0.1]))
        found = await store.asearch(("m",), query="a hot drink", mode="vector")
        assert [item.key for item in found] == ["tea", "car"]
        assert server.requests[-1].body["input"] == ["a hot drink"]


async def test_gemini_embeds_a_batch() -> None:
    with ReplayServer() as server:
        server.reply({"embeddings": [{"values": [0.5, 0.5]}, {"values": [1.0, 0.0]}]})
        embedder = GeminiEmbedder(dimensions=2, api_key="test", base_url=server.url)
        assert await embedder.aembed(["tea", "coffee"]) == [[0.5, 0.5], [1.0, 0.0]]
        sent = server.requests[0]
        assert sent.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
        assert "tea" in str(sent.body) and "outputDimensionality" in str(sent.body)


async def test_gemini_errors_are_library_errors() -> None:
    with ReplayServer() as server:
        server.reply(
            {"error": {"code": 401, "message": "bad key", "status": "UNAUTHENTICATED"}}, status=401
        )
        embedder = GeminiEmbedder(dimensions=2, api_key="test", base_url=server.url)
        with pytest.raises(AuthenticationError, match="bad key"):
            await embedder.aembed(["tea"])


def test_the_model_embedders_are_the_stores_embedders() -> None:
    """One ``Embedder``: public in the memory store, defined below it and the model code."""
    from tenxgraph.core.llm.local_embedder import LocalEmbedder
    from tenxgraph.core.state._embedder import Embedder as Defined
    from tenxgraph.storage.longterm import Embedder
    from tenxgraph.storage.longterm.embedding import Embedder as Public

    assert Embedder is Public is Defined
    assert all(issubclass(cls, Embedder) for cls in (OpenAIEmbedder, GeminiEmbedder, LocalEmbedder))
