"""Long-term memory for agents: tools and a middleware over a ``MemoryStore``.

``memory_tools(store)`` gives the model ``remember``, ``recall`` and
``forget``, scoped to the run's ``user_id``; ``MemoryMiddleware(store)``
puts the user's memories relevant to the latest message in front of each
model call, without storing them in the conversation;
``MemoryExtraction(model, store)`` (or ``aextract_memories``) asks a model
for the facts of each finished turn and merges them with the memories. The store is
``tenxgraph.storage.longterm``'s (in-memory, SQLite, Postgres).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "DEFAULT_NAMESPACE",
    "ExtractionResult",
    "MemoryExtraction",
    "MemoryMiddleware",
    "aextract_memories",
    "fact_key",
    "memory_tools",
]

if TYPE_CHECKING:
    from tenxgraph.core.graph.memory._extract import (
        ExtractionResult,
        MemoryExtraction,
        aextract_memories,
    )
    from tenxgraph.core.graph.memory._middleware import MemoryMiddleware
    from tenxgraph.core.graph.memory._tools import DEFAULT_NAMESPACE, fact_key, memory_tools
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.core.graph.memory._extract": (
                "ExtractionResult",
                "MemoryExtraction",
                "aextract_memories",
            ),
            "tenxgraph.core.graph.memory._middleware": ("MemoryMiddleware",),
            "tenxgraph.core.graph.memory._tools": ("DEFAULT_NAMESPACE", "fact_key", "memory_tools"),
        },
    )
