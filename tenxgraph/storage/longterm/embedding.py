"""Embedders: text to vectors, for the memory store's vector and hybrid search.

``Embedder`` is the interface (one async method; defined in
``tenxgraph.core.state._embedder``, below both the store and the model
code that implements it, and public here); ``HashingEmbedder`` needs
no model at all: it hashes a text's words and word pairs into a fixed
number of buckets (feature hashing), so texts sharing words point the same
way. It finds nothing a lexical search would miss, but it is offline,
deterministic and instant, a baseline and a stand-in in tests. Model-backed
embedders live with the model code in ``tenxgraph.core.llm``:
``minilm_embedder.MiniLMEmbedder`` (all-MiniLM-L6-v2, offline, the one
that finds by meaning without a network), ``local_embedder`` (a GGUF
through llama.cpp), and the OpenAI and Gemini ones.

Vectors are stored as float32 bytes, normalized to length 1 so that a dot
product is the cosine similarity; scoring needs numpy (the ``local`` and
``embeddings`` extras bring it, or ``pip install numpy``).
"""

from __future__ import annotations

import array
import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tenxgraph.core.state._embedder import Embedder
from tenxgraph.errors import ConfigError, MissingExtraError

if TYPE_CHECKING:
    import numpy

__all__ = ["Embedder", "HashingEmbedder", "pack", "similarities"]

_WORD = re.compile(r"\w+")


class HashingEmbedder(Embedder):
    """Words and word pairs hashed into ``dimensions`` buckets (no model, offline)."""

    def __init__(self, dimensions: int = 512) -> None:
        """Vectors of ``dimensions`` floats (more buckets, fewer collisions)."""
        if type(dimensions) is not int or not 8 <= dimensions <= 65_536:
            raise ConfigError(f"dimensions must be an int from 8 to 65536, got {dimensions!r}")
        self.dimensions = dimensions

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Each text's hashed word and word-pair counts (signed, so collisions cancel out)."""
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        words = [word.lower() for word in _WORD.findall(text)]
        for feature in [*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))]:
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
            vector[digest % self.dimensions] += 1.0 if digest >> 63 else -1.0
        return vector


def pack(vector: Sequence[float], dimensions: int) -> bytes | None:
    """The vector normalized to length 1, as float32 bytes; None for a zero vector.

    ``ConfigError`` when the embedder returned the wrong length or a
    non-finite number.
    """
    if len(vector) != dimensions:
        raise ConfigError(f"the embedder returned {len(vector)} numbers, not {dimensions}")
    norm = math.sqrt(sum(x * x for x in vector))
    if not math.isfinite(norm):
        raise ConfigError("the embedder returned a vector holding NaN or infinity")
    if norm == 0:
        return None
    return array.array("f", [x / norm for x in vector]).tobytes()


def similarities(query: bytes, stored: Sequence[bytes]) -> numpy.ndarray[Any, Any]:
    """Cosine similarity of the (packed) query with each packed vector."""
    try:
        import numpy
    except ImportError:
        raise MissingExtraError("numpy", "local") from None
    matrix = numpy.frombuffer(b"".join(stored), dtype=numpy.float32).reshape(len(stored), -1)
    result: numpy.ndarray[Any, Any] = matrix @ numpy.frombuffer(query, dtype=numpy.float32)
    return result
