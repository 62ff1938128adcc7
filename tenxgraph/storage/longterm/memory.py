"""``InMemoryStore``: long-term memory in a dict, for tests and single-process apps.

Nothing survives the process. Lexical search scores with BM25 (k1 = 1.2,
b = 0.75) over the items under the searched prefix, on lowercase words
without stemming; the index is the words of each item, kept beside it.
Every call runs on the caller's loop; each primitive finishes without
awaiting, so calls never interleave, and holds a thread lock, so the
sweeper's thread (``sweep_interval=``) never interleaves with them either.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from dataclasses import dataclass

from tenxgraph.storage.longterm._checks import MAX_VALUE_BYTES
from tenxgraph.storage.longterm._filters import matches
from tenxgraph.storage.longterm.base import MemoryStore, Row, SearchRequest, under
from tenxgraph.storage.longterm.embedding import Embedder

__all__ = ["InMemoryStore"]


@dataclass(slots=True)
class _Stored:
    value: str
    words: Counter[str]
    length: int
    created_at: float
    updated_at: float
    expires_at: float | None
    vector: bytes | None = None
    ttl: float | None = None

    def live(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at > now


class InMemoryStore(MemoryStore):
    """Long-term memory in this process only."""

    def __init__(
        self,
        *,
        default_ttl: float | None = None,
        max_value_bytes: int = MAX_VALUE_BYTES,
        embedder: Embedder | None = None,
        vector_scan: int = 20_000,
        refresh_on_read: bool = True,
        sweep_interval: float | None = None,
        sweep_limit: int = 1_000,
    ) -> None:
        """An empty store (see ``MemoryStore`` for the options)."""
        super().__init__(
            default_ttl=default_ttl,
            max_value_bytes=max_value_bytes,
            embedder=embedder,
            vector_scan=vector_scan,
            refresh_on_read=refresh_on_read,
            sweep_interval=sweep_interval,
            sweep_limit=sweep_limit,
        )
        self._items: dict[tuple[str, str, str], _Stored] = {}
        self._lock = threading.Lock()

    async def _put(
        self,
        user_id: str,
        namespace: str,
        key: str,
        value: str,
        text: str,
        now: float,
        expires_at: float | None,
        vector: bytes | None,
    ) -> float:
        with self._lock:
            old = self._items.get((user_id, namespace, key))
            created = old.created_at if old is not None and old.live(now) else now
            words = terms_with_counts(text)
            ttl = None if expires_at is None else expires_at - now
            self._items[(user_id, namespace, key)] = _Stored(
                value, words, sum(words.values()), created, now, expires_at, vector, ttl
            )
            return created

    async def _refresh(
        self, user_id: str, items: list[tuple[str, str]], now: float
    ) -> dict[tuple[str, str], float]:
        with self._lock:
            expiries: dict[tuple[str, str], float] = {}
            for namespace, key in items:
                stored = self._items.get((user_id, namespace, key))
                if stored is not None and stored.live(now) and stored.ttl is not None:
                    stored.expires_at = expiries[(namespace, key)] = now + stored.ttl
            return expiries

    async def _get(self, user_id: str, namespace: str, key: str, now: float) -> Row | None:
        with self._lock:
            stored = self._items.get((user_id, namespace, key))
            if stored is None or not stored.live(now):
                return None
            return _row(namespace, key, stored, None)

    async def _delete(self, user_id: str, namespace: str, key: str, now: float) -> bool:
        with self._lock:
            stored = self._items.pop((user_id, namespace, key), None)
            return stored is not None and stored.live(now)

    async def _search(self, request: SearchRequest) -> list[Row]:
        with self._lock:
            found = self._found(request)
            if request.terms is None:
                found.sort(key=lambda item: (-item[2].updated_at, item[0], item[1]))
                rows = [_row(namespace, key, stored, None) for namespace, key, stored in found]
            else:
                scored = _bm25(found, request.terms)
                scored.sort(key=lambda item: (-item[0], -item[3].updated_at, item[1], item[2]))
                rows = [_row(ns, key, stored, score) for score, ns, key, stored in scored]
            return rows[request.offset : request.offset + request.limit]

    async def _vectors(self, request: SearchRequest, scan: int) -> list[tuple[str, str, bytes]]:
        with self._lock:
            found = [item for item in self._found(request) if item[2].vector is not None]
            found.sort(key=lambda item: (-item[2].updated_at, item[0], item[1]))
            return [(ns, key, stored.vector) for ns, key, stored in found[:scan] if stored.vector]

    def _found(self, request: SearchRequest) -> list[tuple[str, str, _Stored]]:
        """The tenant's live items under the prefix that pass the filter."""
        return [
            (namespace, key, stored)
            for (user_id, namespace, key), stored in self._items.items()
            if user_id == request.user_id
            and under(namespace, request.prefix)
            and stored.live(request.now)
            and (not request.filter or matches(json.loads(stored.value), request.filter))
        ]

    async def _namespaces(self, user_id: str, prefix: str, now: float) -> list[str]:
        with self._lock:
            return list(
                {
                    namespace
                    for (owner, namespace, _), stored in self._items.items()
                    if owner == user_id and under(namespace, prefix) and stored.live(now)
                }
            )

    async def _tenants(self) -> list[str]:
        with self._lock:
            return list({user_id for user_id, _, _ in self._items})

    async def _purge(self, now: float, limit: int | None) -> int:
        with self._lock:
            expired = [name for name, stored in self._items.items() if not stored.live(now)]
            expired = expired[:limit]
            for name in expired:
                del self._items[name]
            return len(expired)


def terms_with_counts(text: str) -> Counter[str]:
    """How often each lowercase word occurs in ``text``."""
    return Counter(word.lower() for word in re.findall(r"\w+", text))


def _bm25(
    found: list[tuple[str, str, _Stored]], query: list[str]
) -> list[tuple[float, str, str, _Stored]]:
    """BM25 scores of the items matching at least one query word."""
    if not found:
        return []
    count = len(found)
    average = sum(stored.length for _, _, stored in found) / count or 1.0
    having = {word: sum(1 for _, _, s in found if word in s.words) for word in query}
    scored = []
    for namespace, key, stored in found:
        score = 0.0
        for word in query:
            frequency = stored.words.get(word, 0)
            if not frequency:
                continue
            idf = math.log(1 + (count - having[word] + 0.5) / (having[word] + 0.5))
            norm = frequency + 1.2 * (1 - 0.75 + 0.75 * stored.length / average)
            score += idf * frequency * 2.2 / norm
        if score > 0:
            scored.append((score, namespace, key, stored))
    return scored


def _row(namespace: str, key: str, stored: _Stored, score: float | None) -> Row:
    return (
        namespace,
        key,
        stored.value,
        stored.created_at,
        stored.updated_at,
        stored.expires_at,
        score,
    )
