"""The ``Embedder`` interface: texts to vectors of one fixed length.

It lives below both of its sides (DESIGN.md, imports point downward):
the memory store calls it (``tenxgraph.storage.longterm``, whose
``embedding`` module is its public home, with ``HashingEmbedder``) and the
model adapters implement it (``tenxgraph.core.llm``'s ``*_embedder``
modules), and neither of those two layers imports the other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from tenxgraph._sync import run_sync

__all__ = ["Embedder"]


class Embedder(ABC):
    """Turns texts into vectors of one fixed length."""

    dimensions: int
    """The length of every vector."""

    @abstractmethod
    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Sync ``aembed``."""
        return run_sync(self.aembed(texts))
