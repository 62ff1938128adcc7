"""The local embedder on the real SmolLM2 GGUF, and a memory store searching with it."""

from __future__ import annotations

import math

import pytest

from tenxgraph.core.llm.local_embedder import LocalEmbedder
from tenxgraph.storage.longterm import InMemoryStore

pytestmark = pytest.mark.local_model


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_vectors_have_the_model_length_and_are_deterministic() -> None:
    embedder = LocalEmbedder()
    first, again = embedder.embed(["green tea"]) + embedder.embed(["green tea"])
    assert len(first) == embedder.dimensions == 576
    assert cosine(first, again) > 0.999


def test_a_store_finds_by_vector() -> None:
    store = InMemoryStore(embedder=LocalEmbedder())
    store.put(("m",), "tea", {"text": "I drink green tea"})
    store.put(("m",), "car", {"text": "My car is a red Volvo"})
    found = store.search(("m",), query="tea", mode="vector", limit=2)
    assert [item.key for item in found] == ["tea", "car"]
