"""Long-term memory: JSON facts per tenant that outlive a thread, found again by search.

``InMemoryStore`` (this process only) and ``SqliteMemoryStore`` (FTS5
lexical search) need only the standard library; ``PgMemoryStore``
(``tsvector`` full-text search) needs the extra ``postgres``. Given an
``Embedder`` (``HashingEmbedder`` here; ``MiniLMEmbedder`` in
``tenxgraph.core.llm.minilm_embedder`` for search by meaning offline), any
of them adds vector and hybrid search. All implement
the ``MemoryStore`` contract (``base``) and pass the same suite
(``tenxgraph.testing.memory_stores``). Every export is imported on first
access, so importing this package loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_TTL",
    "Embedder",
    "HashingEmbedder",
    "InMemoryStore",
    "MemoryItem",
    "MemoryStore",
    "PgMemoryStore",
    "SqliteMemoryStore",
]

if TYPE_CHECKING:
    from tenxgraph.storage.longterm.base import DEFAULT_TTL, MemoryItem, MemoryStore
    from tenxgraph.storage.longterm.embedding import Embedder, HashingEmbedder
    from tenxgraph.storage.longterm.memory import InMemoryStore
    from tenxgraph.storage.longterm.postgres import PgMemoryStore
    from tenxgraph.storage.longterm.sqlite import SqliteMemoryStore
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.storage.longterm.base": ("DEFAULT_TTL", "MemoryItem", "MemoryStore"),
            "tenxgraph.storage.longterm.embedding": ("Embedder", "HashingEmbedder"),
            "tenxgraph.storage.longterm.memory": ("InMemoryStore",),
            "tenxgraph.storage.longterm.postgres": ("PgMemoryStore",),
            "tenxgraph.storage.longterm.sqlite": ("SqliteMemoryStore",),
        },
    )
