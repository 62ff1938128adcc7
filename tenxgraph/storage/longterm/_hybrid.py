"""Vector and hybrid search over any backend, written once.

With an embedder, each put stores the value's vector beside the item (the
backends keep it as bytes). A search then:

- **vector**: fetches the packed vectors of the tenant's live items under
  the prefix that pass the filter, newest first, at most ``vector_scan`` of
  them, and scores them against the query's vector (cosine, numpy);
- **hybrid** (the default with an embedder): takes the lexical and the
  vector rankings, ``depth`` deep each, and fuses them by reciprocal rank
  (``sum 1 / (60 + rank)``), so an item high in either list comes first and
  one high in both comes first of all. Scores are the fused values.

Where the vectors come from: a backend with an index answers the nearest
``depth`` itself (``MemoryStore._nearest``: SQLite through ``sqlite-vec``,
Postgres through pgvector). Otherwise (no index, or a request the index
cannot filter exactly: a value filter, a deep prefix) vectors are scored by
brute force in the process, bounded by ``vector_scan`` rows per search
(newest first). A user's memories number in the hundreds or thousands, so
a tenant-scoped scan is exact and cheap (1,000 vectors of 576 floats: well
under a millisecond of numpy); a tenant past the bound is searched over
its newest ``vector_scan`` items only, while its lexical search still
covers everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from tenxgraph.storage.longterm.embedding import pack, similarities

if TYPE_CHECKING:
    from tenxgraph.storage.longterm.base import MemoryStore, Row, SearchRequest

__all__ = ["RRF_K", "Hit", "best_first", "vector_search"]

RRF_K = 60
"""The rank offset of reciprocal rank fusion (the usual value)."""

Hit = tuple[float, str, str]
"""One ranked item: ``(score, namespace, key)``."""


def best_first(hits: Iterable[Hit]) -> list[Hit]:
    """The hits by score, highest first; ties by namespace, then key (a stable page order)."""
    return sorted(hits, key=lambda hit: (-hit[0], hit[1], hit[2]))


async def vector_search(store: MemoryStore, request: SearchRequest, hybrid: bool) -> list[Row]:
    """The vector (or hybrid) ranking of ``request``, one page of it."""
    assert store.embedder is not None and request.query is not None
    depth = min(1_000, max(50, 2 * (request.limit + request.offset)))
    wanted = await store.embedder.aembed([request.query])
    query = pack(wanted[0], store.embedder.dimensions)
    vectors = [] if query is None else await _nearest(store, request, query, depth)
    if not hybrid:
        return await _rows(store, request, [(score, ns, key) for score, ns, key in vectors], {})
    lexical = await store._search(replace(request, limit=depth, offset=0)) if request.terms else []
    fused: dict[tuple[str, str], float] = {}
    for rank, (ns, key, *_) in enumerate(lexical):
        fused[(ns, key)] = fused.get((ns, key), 0.0) + 1.0 / (RRF_K + rank + 1)
    for rank, (_, ns, key) in enumerate(vectors):
        fused[(ns, key)] = fused.get((ns, key), 0.0) + 1.0 / (RRF_K + rank + 1)
    ranked = best_first((score, ns, key) for (ns, key), score in fused.items())
    known = {(row[0], row[1]): row for row in lexical}
    return await _rows(store, request, ranked, known)


async def _nearest(
    store: MemoryStore, request: SearchRequest, query: bytes, depth: int
) -> list[Hit]:
    """The backend's index answer, else the brute-force scan of its newest ``vector_scan``."""
    found = await store._nearest(request, query, depth)
    if found is not None:
        return found
    stored = await store._vectors(request, store.vector_scan)
    if not stored:
        return []
    scores = similarities(query, [vector for _, _, vector in stored])
    hits = ((float(score), ns, key) for score, (ns, key, _) in zip(scores, stored, strict=True))
    return best_first(hits)[:depth]


async def _rows(
    store: MemoryStore,
    request: SearchRequest,
    ranked: list[Hit],
    known: dict[tuple[str, str], Row],
) -> list[Row]:
    """The page's rows with their new scores (rows not at hand are read again)."""
    rows: list[Row] = []
    for score, ns, key in ranked[request.offset : request.offset + request.limit]:
        row = known.get((ns, key)) or await store._get(request.user_id, ns, key, request.now)
        if row is not None:  # deleted meanwhile
            rows.append((*row[:6], score))
    return rows
