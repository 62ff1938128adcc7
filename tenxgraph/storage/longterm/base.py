"""The long-term memory contract: JSON facts that outlive a thread, found again by search.

A thread's messages end with the thread; a user's preferences, names and
decisions should not. A memory store keeps them as items:

- **Addressed by namespace and key.** A namespace is a tuple of str parts
  (``("users", "prefs")``, joined by ``/`` where shown); a key names one
  item in it. ``put`` on an existing namespace and key replaces the value
  (``updated_at`` moves, ``created_at`` stays): one fact, one item.
- **Tenant-scoped.** Every call takes a ``user_id`` (``"default"`` when
  omitted), checked like a thread's. One tenant never sees, finds, lists or
  deletes another's items, whatever the namespaces.
- **Values are JSON objects**, checked before any I/O (``_checks``); bad
  input raises an error naming what was wrong, and nothing stored changes.
- **Searched.** ``search(namespace_prefix, query=..., filter=...)`` returns
  the items under the prefix (part by part: ``("users",)`` covers
  ``("users", "prefs")``, never ``("users2",)``). With a query, only items
  matching at least one of its words, best first, with a ``score`` (higher
  is better; comparable within one search only). Lexical search indexes a
  value's string leaves (those a put's ``index`` chose), not its field
  names; SQLite and Postgres stem English words (SQLite's porter stemmer,
  Postgres' ``english`` configuration, which also drops stop words), the
  in-memory store does not. Without a query: most recently updated first.
- **Expiring.** ``ttl`` (seconds per put; none given: the store's
  ``default_ttl``; None: never) makes an item invisible once it is over;
  ``purge_expired`` deletes expired rows for good, ``sweep_expired`` a
  bounded number of them, as the optional sweeper thread does
  (``_sweeper``).

The public methods are written once here; a backend implements small
primitives on checked arguments. ``tenxgraph.testing.memory_stores`` holds
the suite every backend passes. Async methods are the implementation; each
sync twin runs it through the one sync bridge.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal

from tenxgraph._sync import run_sync
from tenxgraph.core.state.ids import DEFAULT_USER, check_id
from tenxgraph.errors import ConfigError
from tenxgraph.storage._closing import Closing
from tenxgraph.storage.longterm._checks import (
    MAX_VALUE_BYTES,
    check_index,
    check_key,
    check_limit,
    check_namespace,
    check_query,
    check_ttl,
    encode_value,
    search_text,
    split_namespace,
)
from tenxgraph.storage.longterm._filters import Condition, check_filter
from tenxgraph.storage.longterm._sweeper import Sweeper
from tenxgraph.utils import _otel as otel

if TYPE_CHECKING:
    from tenxgraph.storage.longterm.embedding import Embedder

__all__ = ["DEFAULT_TTL", "TTL", "Index", "MemoryItem", "MemoryStore", "Row", "SearchRequest"]

Namespace = tuple[str, ...]


class _Default(Enum):
    DEFAULT_TTL = "the store's default_ttl"

    def __repr__(self) -> str:
        return "DEFAULT_TTL"


DEFAULT_TTL: Final = _Default.DEFAULT_TTL
"""``put(..., ttl=DEFAULT_TTL)`` (the default): the item lives the store's ``default_ttl``."""

TTL = float | None | Literal[_Default.DEFAULT_TTL]
"""A put's ttl: seconds, None (never expires) or ``DEFAULT_TTL``."""

Index = Literal[False] | Sequence[str] | None
"""A put's ``index``: None (every string of the value), False (nothing) or field paths."""

SearchMode = Literal["auto", "lexical", "vector", "hybrid"]
"""How a query is matched: ``auto`` is ``hybrid`` with an embedder, else ``lexical``."""


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored fact, as ``get`` and ``search`` return it."""

    namespace: Namespace
    """Where it lives, e.g. ``("users", "prefs")``."""
    key: str
    """Its name within the namespace."""
    value: dict[str, Any]
    """The JSON object stored."""
    created_at: float
    """When the key was first put (UNIX time); a replacing put keeps it."""
    updated_at: float
    """When the value was last put."""
    expires_at: float | None = None
    """When it stops being visible (None: never)."""
    score: float | None = None
    """How well it matched a search query (higher is better); None outside a query."""


Row = tuple[str, str, str | dict[str, Any], float, float, float | None, float | None]
"""What backends return per item: namespace text, key, value (JSON text or a decoded dict),
created_at, updated_at, expires_at, score."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A checked search, as backends receive it."""

    user_id: str
    prefix: str
    """The stored text of the namespace prefix (``""``: every namespace)."""
    terms: list[str] | None
    """The query's distinct lowercase words (None: no query; empty: matches nothing)."""
    filter: tuple[Condition, ...]
    """The checked conditions (``_filters``), all of which must hold."""
    limit: int
    offset: int
    now: float
    query: str | None = None
    """The query as given (what an embedder embeds)."""


def to_item(row: Row) -> MemoryItem:
    """A ``MemoryItem`` of a backend row."""
    namespace, key, value, created, updated, expires, score = row
    decoded = json.loads(value) if isinstance(value, str) else value
    return MemoryItem(split_namespace(namespace), key, decoded, created, updated, expires, score)


def _found(items: list[MemoryItem]) -> dict[str, Any]:
    """A search's span attribute known at its end: how many items it found."""
    return {"tenxgraph.memory.results": len(items)}


def _check_refresh(refresh: object) -> None:
    if refresh is not None and not isinstance(refresh, bool):
        raise ConfigError(f"refresh_ttl must be True, False or None, got {refresh!r}")


def _fits(namespace: Namespace, pattern: Namespace) -> bool:
    """Whether ``namespace`` starts with ``pattern``, a ``"*"`` part matching any part."""
    if len(namespace) < len(pattern):
        return False
    return all(want in ("*", part) for want, part in zip(pattern, namespace, strict=False))


def under(namespace: str, prefix: str) -> bool:
    """Whether the stored namespace is the prefix or below it (whole parts only)."""
    return not prefix or namespace == prefix or namespace.startswith(prefix + "/")


class MemoryStore(Closing, ABC):
    """Long-term memory: JSON items per tenant, namespace and key, with search and expiry."""

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
        """``default_ttl``: seconds an item lives when ``put`` gives no ttl (None: for ever).

        ``sweep_interval`` (seconds; None: no sweeper): a background thread,
        started by the store's first call and stopped by ``aclose``, deletes
        expired items every so often, at most ``sweep_limit`` per sweep (see
        ``_sweeper``).

        ``refresh_on_read``: a ``get`` or ``search`` that returns an item with
        a ttl starts its ttl again (``expires_at`` = now + its ttl), so a
        memory in use stays; each call's ``refresh_ttl=`` overrides it.

        ``embedder`` turns on vector and hybrid search (see ``_hybrid``): each
        put embeds the value's text; ``vector_scan`` bounds the vectors one
        search scores (a tenant's newest first).
        """
        self.default_ttl = check_ttl(default_ttl)
        self.max_value_bytes = check_limit("max_value_bytes", max_value_bytes, most=64 << 20)
        self.embedder = embedder
        self.vector_scan = check_limit("vector_scan", vector_scan, most=1 << 24)
        if not isinstance(refresh_on_read, bool):
            raise ConfigError(f"refresh_on_read must be True or False, got {refresh_on_read!r}")
        self.refresh_on_read = refresh_on_read
        self._sweeper = Sweeper(self, sweep_interval, sweep_limit)

    async def aput(
        self,
        namespace: Namespace,
        key: str,
        value: Mapping[str, Any],
        *,
        user_id: str = DEFAULT_USER,
        ttl: TTL = DEFAULT_TTL,
        index: Index = None,
    ) -> MemoryItem:
        """Store ``value`` under ``namespace`` and ``key`` for ``user_id``, replacing any value.

        ``ttl``: seconds the item lives, None for ever, ``DEFAULT_TTL`` (the
        default) the store's ``default_ttl``. ``index``: what a query
        searches, lexically and by vector: None every string of the value,
        False nothing (the item is still got, listed and filtered), a list
        of field paths (``"title"``, ``"meta.note"``, ``"$"`` the whole value)
        the strings under them. Returns the item as stored.
        """
        check_id("user_id", user_id)
        ns, key = check_namespace(namespace), check_key(key)
        text = encode_value(value, self.max_value_bytes)
        seconds = self.default_ttl if ttl is DEFAULT_TTL else check_ttl(ttl)
        fields = check_index(index)
        self._sweeper.ensure()
        now = time.time()
        expires = None if seconds is None else now + seconds
        decoded = json.loads(text)
        indexed = search_text(decoded, fields)
        vector = await self._embed(indexed)
        created = await self._put(user_id, ns, key, text, indexed, now, expires, vector)
        return MemoryItem(split_namespace(ns), key, decoded, created, now, expires)

    async def _embed(self, text: str) -> bytes | None:
        if self.embedder is None or not text.strip():
            return None
        from tenxgraph.storage.longterm.embedding import pack

        vectors = await self.embedder.aembed([text])
        return pack(vectors[0], self.embedder.dimensions)

    def put(
        self,
        namespace: Namespace,
        key: str,
        value: Mapping[str, Any],
        *,
        user_id: str = DEFAULT_USER,
        ttl: TTL = DEFAULT_TTL,
        index: Index = None,
    ) -> MemoryItem:
        """Sync ``aput``."""
        return run_sync(self.aput(namespace, key, value, user_id=user_id, ttl=ttl, index=index))

    async def aget(
        self,
        namespace: Namespace,
        key: str,
        *,
        user_id: str = DEFAULT_USER,
        refresh_ttl: bool | None = None,
    ) -> MemoryItem | None:
        """The item, or None if ``user_id`` has none there (or it expired).

        ``refresh_ttl`` (None: the store's ``refresh_on_read``) starts the
        item's ttl again.
        """
        check_id("user_id", user_id)
        ns, key = check_namespace(namespace), check_key(key)
        _check_refresh(refresh_ttl)
        self._sweeper.ensure()
        now = time.time()
        row = await self._get(user_id, ns, key, now)
        if row is None:
            return None
        return (await self._refreshed(user_id, [to_item(row)], now, refresh_ttl))[0]

    def get(
        self,
        namespace: Namespace,
        key: str,
        *,
        user_id: str = DEFAULT_USER,
        refresh_ttl: bool | None = None,
    ) -> MemoryItem | None:
        """Sync ``aget``."""
        return run_sync(self.aget(namespace, key, user_id=user_id, refresh_ttl=refresh_ttl))

    async def _refreshed(
        self, user_id: str, items: list[MemoryItem], now: float, refresh: bool | None
    ) -> list[MemoryItem]:
        """The items, their ttls started again if asked (``refresh_on_read``)."""
        wanted = self.refresh_on_read if refresh is None else refresh
        due = [("/".join(i.namespace), i.key) for i in items if i.expires_at is not None]
        if not wanted or not due:
            return items
        expiries = await self._refresh(user_id, due, now)
        named = [(("/".join(item.namespace), item.key), item) for item in items]
        return [
            replace(item, expires_at=expiries.get(name, item.expires_at)) for name, item in named
        ]

    async def adelete(self, namespace: Namespace, key: str, *, user_id: str = DEFAULT_USER) -> bool:
        """Delete the item; False if ``user_id`` had none there."""
        check_id("user_id", user_id)
        ns, key = check_namespace(namespace), check_key(key)
        return await self._delete(user_id, ns, key, time.time())

    def delete(self, namespace: Namespace, key: str, *, user_id: str = DEFAULT_USER) -> bool:
        """Sync ``adelete``."""
        return run_sync(self.adelete(namespace, key, user_id=user_id))

    async def asearch(
        self,
        namespace_prefix: Namespace = (),
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        user_id: str = DEFAULT_USER,
        mode: SearchMode = "auto",
        refresh_ttl: bool | None = None,
    ) -> list[MemoryItem]:
        """``user_id``'s items under the prefix: matching ``query`` best first, else newest first.

        ``filter`` keeps items whose fields (dotted paths into nested objects)
        pass conditions: a JSON scalar to equal, or operators ``$eq``, ``$ne``,
        ``$gt``, ``$gte``, ``$lt``, ``$lte`` (``_filters``). ``limit`` (at
        most 1,000) and ``offset`` page the results.
        ``mode`` (with a query): ``lexical`` (words), ``vector`` (the
        embedder's nearest), ``hybrid`` (both, fused), ``auto`` (hybrid with
        an embedder, else lexical). ``refresh_ttl`` (None: the store's
        ``refresh_on_read``) starts the returned items' ttls again.
        """
        check_id("user_id", user_id)
        _check_refresh(refresh_ttl)
        request = SearchRequest(
            user_id,
            check_namespace(namespace_prefix, name="namespace_prefix", empty=True),
            check_query(query),
            check_filter(filter),
            check_limit("limit", limit),
            check_limit("offset", offset, most=1 << 31),
            time.time(),
            query,
        )
        chosen = self._mode(mode) if query is not None else "lexical"
        self._sweeper.ensure()
        searching = self._searched(request, chosen, refresh_ttl)
        if otel.tracer() is None:
            return await searching
        attributes: dict[str, Any] = {
            "tenxgraph.memory.namespace": request.prefix,
            "tenxgraph.memory.limit": request.limit,
            "tenxgraph.memory.mode": chosen,
        }
        if query is not None and otel.content_from_env():
            attributes["tenxgraph.memory.query"] = query
        return await otel.spanned("tenxgraph.memory.search", attributes, searching, _found)

    async def _searched(
        self, request: SearchRequest, chosen: str, refresh_ttl: bool | None
    ) -> list[MemoryItem]:
        if request.limit == 0 or (request.terms == [] and chosen == "lexical"):
            return []
        if chosen == "lexical":
            rows = await self._search(request)
        else:
            from tenxgraph.storage.longterm._hybrid import vector_search

            rows = await vector_search(self, request, chosen == "hybrid")
        items = [to_item(row) for row in rows]
        return await self._refreshed(request.user_id, items, request.now, refresh_ttl)

    def _mode(self, mode: object) -> str:
        if mode not in ("auto", "lexical", "vector", "hybrid"):
            raise ConfigError(f"mode must be auto, lexical, vector or hybrid, got {mode!r}")
        if mode == "auto":
            return "lexical" if self.embedder is None else "hybrid"
        if mode != "lexical" and self.embedder is None:
            raise ConfigError(f"mode {mode!r} needs a store made with an embedder")
        return str(mode)

    def search(
        self,
        namespace_prefix: Namespace = (),
        *,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        user_id: str = DEFAULT_USER,
        mode: SearchMode = "auto",
        refresh_ttl: bool | None = None,
    ) -> list[MemoryItem]:
        """Sync ``asearch``."""
        return run_sync(
            self.asearch(
                namespace_prefix,
                query=query,
                filter=filter,
                limit=limit,
                offset=offset,
                user_id=user_id,
                mode=mode,
                refresh_ttl=refresh_ttl,
            )
        )

    async def alist_namespaces(
        self,
        prefix: Namespace = (),
        *,
        suffix: Namespace = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
        user_id: str = DEFAULT_USER,
    ) -> list[Namespace]:
        """``user_id``'s namespaces with live items, starting with ``prefix``, ending ``suffix``.

        Sorted. A ``"*"`` part of ``prefix`` or ``suffix`` matches any one part
        (``("users", "*", "prefs")``). ``max_depth`` then cuts longer
        namespaces to that many parts (merging the ones that become equal),
        so ``max_depth=1`` lists the top level; ``limit`` and ``offset`` page
        the result.
        """
        check_id("user_id", user_id)
        head = split_namespace(check_namespace(prefix, name="prefix", empty=True))
        tail = split_namespace(check_namespace(suffix, name="suffix", empty=True))
        if max_depth is not None:
            check_limit("max_depth", max_depth, most=64)
        check_limit("limit", limit)
        check_limit("offset", offset, most=1 << 31)
        self._sweeper.ensure()
        literal = head[: head.index("*")] if "*" in head else head
        stored = await self._namespaces(user_id, "/".join(literal), time.time())
        found = {
            namespace[:max_depth] if max_depth is not None else namespace
            for namespace in map(split_namespace, stored)
            if _fits(namespace, head) and _fits(namespace[::-1], tail[::-1])
        }
        return sorted(found)[offset : offset + limit]

    def list_namespaces(
        self,
        prefix: Namespace = (),
        *,
        suffix: Namespace = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
        user_id: str = DEFAULT_USER,
    ) -> list[Namespace]:
        """Sync ``alist_namespaces``."""
        return run_sync(
            self.alist_namespaces(
                prefix,
                suffix=suffix,
                max_depth=max_depth,
                limit=limit,
                offset=offset,
                user_id=user_id,
            )
        )

    async def alist_tenants(self) -> list[str]:
        """Every ``user_id`` with stored items (expired ones not yet purged included), sorted."""
        return sorted(await self._tenants())

    def list_tenants(self) -> list[str]:
        """Sync ``alist_tenants``."""
        return run_sync(self.alist_tenants())

    async def apurge_expired(self) -> int:
        """Delete every tenant's expired items for good; return how many.

        Expired items are invisible already; this reclaims their space.
        """
        return await self._purge(time.time(), None)

    def purge_expired(self) -> int:
        """Sync ``apurge_expired``."""
        return run_sync(self.apurge_expired())

    async def asweep_expired(self, limit: int = 1_000) -> int:
        """Delete at most ``limit`` expired items (any tenant's); return how many.

        ``apurge_expired`` bounded: what the background sweeper runs, so one
        sweep's work (and its write transaction) stays small.
        """
        return await self._purge(time.time(), check_limit("limit", limit, most=1 << 20))

    def sweep_expired(self, limit: int = 1_000) -> int:
        """Sync ``asweep_expired``."""
        return run_sync(self.asweep_expired(limit))

    async def aclose(self) -> None:
        """Stop the sweeper and release connections; a later call opens them again."""
        await self._sweeper.astop()

    @property
    def vector_index(self) -> str | None:
        """The index serving vector search (``"sqlite-vec"``, ``"pgvector"``), or None.

        None: vectors are scored by brute force in the process (bounded by
        ``vector_scan``). Postgres knows it once connected.
        """
        return None

    async def _nearest(
        self, request: SearchRequest, query: bytes, k: int
    ) -> list[tuple[float, str, str]] | None:
        """``(cosine, namespace, key)`` of the ``k`` nearest items a search covers, best first.

        None when no index can answer this request: the caller scores
        ``_vectors`` itself. A backend with an index overrides it.
        """
        return None

    # What a backend implements. Arguments are checked; namespaces are their stored text.

    @abstractmethod
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
        """Insert or replace the item (``text``: what lexical search indexes); its created_at.

        ``vector``: the packed embedding of ``text`` (None without an embedder).

        Replacing an expired item starts it afresh (created_at = now).
        """

    @abstractmethod
    async def _get(self, user_id: str, namespace: str, key: str, now: float) -> Row | None:
        """The live item (score None), or None."""

    @abstractmethod
    async def _refresh(
        self, user_id: str, items: list[tuple[str, str]], now: float
    ) -> dict[tuple[str, str], float]:
        """Start again the ttl of each live ``(namespace, key)`` that has one (``now + ttl``).

        The ttl is the one its last put gave. Returns the new ``expires_at``
        of each item refreshed.
        """

    @abstractmethod
    async def _delete(self, user_id: str, namespace: str, key: str, now: float) -> bool:
        """Delete the item (live or expired); whether a live one was there at ``now``."""

    @abstractmethod
    async def _search(self, request: SearchRequest) -> list[Row]:
        """Live items under the prefix passing the filter; by score (query) or updated_at."""

    @abstractmethod
    async def _vectors(self, request: SearchRequest, scan: int) -> list[tuple[str, str, bytes]]:
        """(namespace, key, vector) of the live items a search covers, newest first.

        Only items with a vector, under the prefix, passing the filter; at most ``scan``.
        """

    @abstractmethod
    async def _namespaces(self, user_id: str, prefix: str, now: float) -> list[str]:
        """The distinct stored namespaces under ``prefix`` holding a live item."""

    @abstractmethod
    async def _tenants(self) -> list[str]:
        """The user_ids with at least one row."""

    @abstractmethod
    async def _purge(self, now: float, limit: int | None) -> int:
        """Delete the items expired at ``now`` (at most ``limit``, None: all); how many."""
