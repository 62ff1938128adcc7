"""Listings, filters, indexing and expiry options of the memory store suite.

Part of ``MemoryStoreContract`` (``tenxgraph.testing.memory_stores``),
kept apart for length: namespace listings with ``"*"`` and ``suffix``,
filter operators on nested paths and lists, ``put(..., index=...)``,
``ttl=None`` against a ``default_ttl``, and the expiry sweeper. Every
backend runs them through the ``make_memory_store`` fixture.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tenxgraph.errors import ConfigError, InvalidIdError
from tenxgraph.storage.longterm import DEFAULT_TTL, HashingEmbedder, MemoryStore

__all__ = ["StoreOptionsContract"]

MakeMemoryStore = Callable[..., MemoryStore]

FRUIT: dict[str, dict[str, Any]] = {
    "a": {"n": 1, "name": "apple", "meta": {"stars": 4, "src": "web"}, "tags": ["tea", "green"]},
    "b": {"n": 2.5, "name": "banana", "meta": {"stars": 2}, "tags": ["coffee"]},
    "c": {"n": "3", "name": "cherry", "meta": "flat", "tags": "tea"},
    "d": {"n": True, "name": "Äpfel", "tags": [["tea"]]},
}


async def found(store: MemoryStore, **search: Any) -> list[str]:
    """The keys a search returns, sorted."""
    return sorted(item.key for item in await store.asearch(limit=100, **search))


class StoreOptionsContract:
    """Listings, filters, indexing and expiry options (part of ``MemoryStoreContract``)."""

    async def test_list_namespaces_with_wildcards_and_suffix(self, store: MemoryStore) -> None:
        """``"*"`` matches any one part, in prefix and suffix; max_depth merges after matching."""
        for namespace in [
            ("users", "ana", "prefs"),
            ("users", "bob", "prefs"),
            ("users", "bob", "notes"),
            ("docs", "v1"),
            ("docs", "draft", "v1"),
        ]:
            await store.aput(namespace, "k", {"v": 1})
        prefs = [("users", "ana", "prefs"), ("users", "bob", "prefs")]
        assert await store.alist_namespaces(("users", "*", "prefs")) == prefs
        assert await store.alist_namespaces(suffix=("*", "prefs")) == prefs
        assert await store.alist_namespaces(suffix=("v1",)) == [
            ("docs", "draft", "v1"),
            ("docs", "v1"),
        ]
        assert await store.alist_namespaces(("users",), suffix=("notes",)) == [
            ("users", "bob", "notes")
        ]
        assert await store.alist_namespaces(("*",), max_depth=1) == [("docs",), ("users",)]
        assert await store.alist_namespaces(("users", "*"), max_depth=2) == [
            ("users", "ana"),
            ("users", "bob"),
        ]
        assert await store.alist_namespaces(("*", "*", "*"), limit=1, offset=1) == [
            ("users", "ana", "prefs")
        ]
        assert await store.alist_namespaces(suffix=("a", "b", "c", "d")) == []
        assert await store.alist_namespaces(("users", "*"), user_id="carol") == []
        with pytest.raises(InvalidIdError, match="suffix part 0 must not be empty"):
            await store.alist_namespaces(suffix=("",))

    async def test_filter_operators_on_paths_and_lists(self, store: MemoryStore) -> None:
        """$eq/$ne/$gt/$gte/$lt/$lte on nested paths; a list holds when one element does."""
        for key, value in FRUIT.items():
            await store.aput(("fruit",), key, value)
        assert await found(store, filter={"n": {"$gt": 1}}) == ["b"]
        assert await found(store, filter={"n": {"$gte": 1}}) == ["a", "b"]
        assert await found(store, filter={"n": {"$lte": 2.5}}) == ["a", "b"]
        assert await found(store, filter={"n": {"$gte": 1, "$lt": 2}}) == ["a"]
        assert await found(store, filter={"n": {"$eq": 1}}) == ["a"]  # True is not 1
        assert await found(store, filter={"n": {"$ne": 1}}) == ["b", "c", "d"]
        assert await found(store, filter={"n": {"$eq": True}}) == ["d"]
        assert await found(store, filter={"n": "3"}) == ["c"]
        assert await found(store, filter={"name": {"$gt": "b"}}) == ["b", "c", "d"]  # Ä > b
        assert await found(store, filter={"name": {"$lt": "b"}}) == ["a"]
        assert await found(store, filter={"meta.stars": {"$gte": 3}}) == ["a"]
        assert await found(store, filter={"meta.stars": 2, "name": "banana"}) == ["b"]
        assert await found(store, filter={"meta.src": "web"}) == ["a"]
        assert await found(store, filter={"meta.stars": {"$ne": 4}}) == ["b", "c", "d"]
        assert await found(store, filter={"meta": "flat"}) == ["c"]
        assert await found(store, filter={"meta.stars.x": 4}) == []
        assert await found(store, filter={"tags.0": "tea"}) == []  # paths walk objects only
        assert await found(store, filter={"tags": "tea"}) == ["a", "c"]  # not d's inner list
        assert await found(store, filter={"tags": {"$ne": "tea"}}) == ["b", "d"]
        assert await found(store, filter={"tags": {"$gt": "d"}}) == ["a", "c"]
        assert await found(store, filter={"missing": {"$ne": None}}) == ["a", "b", "c", "d"]
        assert await found(store, query="apple banana", filter={"meta.stars": {"$lt": 3}}) == ["b"]

    async def test_filters_in_vector_search(self, make_memory_store: MakeMemoryStore) -> None:
        """Vector search keeps the same items a filter keeps."""
        store = make_memory_store(embedder=HashingEmbedder(64))
        for key, value in FRUIT.items():
            await store.aput(("fruit",), key, value)
        wanted = {"meta.stars": {"$gt": 1}, "tags": {"$ne": "coffee"}}
        assert await found(store, query="apple", mode="vector", filter=wanted) == ["a"]

    @pytest.mark.parametrize(
        ("filter", "message"),
        [
            ({"n": {"$regex": "x"}}, "filter 'n': unknown operator '\\$regex'"),
            ({"n": {"$gt": None}}, "filter 'n': \\$gt compares numbers or strings"),
            ({"n": {"$lte": True}}, "filter 'n': \\$lte compares numbers or strings"),
            ({"n": {"$eq": [1]}}, "filter 'n': \\$eq needs a JSON scalar"),
            ({"n": ["a"]}, "filter 'n': \\$eq needs a JSON scalar"),
            ({"n": {}}, "filter 'n': an empty dict"),
            ({"n": {"$lt": math.inf}}, "filter 'n': \\$lt needs a finite number"),
            ({"n": 1 << 63}, "filter 'n': \\$eq needs an int within 64 bits"),
            ({"a..b": 1}, "'a..b' has an empty part"),
            ({"": 1}, "a filter path must be a non-empty str"),
            ({'a"b': 1}, "must not contain"),
        ],
    )
    async def test_bad_filters(self, store: MemoryStore, filter: object, message: str) -> None:
        """A bad filter is refused, naming its path, before any query."""
        with pytest.raises(ConfigError, match=message):
            await store.asearch(filter=filter)  # type: ignore[arg-type]

    async def test_index_chooses_what_a_query_finds(self, store: MemoryStore) -> None:
        """index=False: found by no query; a list of paths: by the strings under them only."""
        await store.aput(("m",), "title", {"title": "green tea", "body": "lisbon"}, index=["title"])
        await store.aput(("m",), "off", {"text": "green lisbon"}, index=False)
        note = {"meta": {"note": "harbour"}, "text": "mountain"}
        await store.aput(("m",), "nested", note, index=["meta.note", "absent"])
        await store.aput(("m",), "whole", {"a": {"b": "harbour"}}, index=["$"])
        assert await found(store, query="green") == ["title"]
        assert await found(store, query="lisbon") == []
        assert await found(store, query="harbour") == ["nested", "whole"]
        assert await found(store, query="mountain") == []
        assert await found(store) == ["nested", "off", "title", "whole"]  # still listed
        got = await store.aget(("m",), "off")
        assert got is not None and got.value == {"text": "green lisbon"}
        await store.aput(("m",), "off", {"text": "green lisbon"})  # a put without index: all
        assert await found(store, query="lisbon") == ["off"]

    @pytest.mark.parametrize(
        ("index", "message"),
        [
            ("title", "index must be None, False or a list"),
            (True, "index must be None, False or a list"),
            ([""], "an index path must be a non-empty str"),
            (["a..b"], "has an empty part"),
            ([3], "an index path must be a non-empty str"),
            (["f"] * 65, "over the limit of 64"),
        ],
    )
    async def test_bad_index(self, store: MemoryStore, index: object, message: str) -> None:
        """A bad ``index`` is refused and nothing is stored."""
        with pytest.raises(ConfigError, match=message):
            await store.aput(("m",), "k", {"title": "x"}, index=index)  # type: ignore[arg-type]
        assert await store.asearch() == []

    async def test_index_chooses_what_is_embedded(self, make_memory_store: MakeMemoryStore) -> None:
        """Vectors follow ``index`` too: no vector for index=False, only the chosen fields."""
        store = make_memory_store(embedder=HashingEmbedder(256))
        await store.aput(("m",), "off", {"text": "lisbon river"}, index=False)
        value = {"title": "green tea", "body": "lisbon river"}
        await store.aput(("m",), "title", value, index=["title"])
        await store.aput(("m",), "plain", {"text": "lisbon river"})
        hits = await store.asearch(query="lisbon river", mode="vector")
        assert [item.key for item in hits] == ["plain", "title"]
        assert hits[1].score is not None and hits[1].score < 0.5
        tea = await store.asearch(query="green tea", mode="vector", limit=1)
        assert [item.key for item in tea] == ["title"]

    async def test_ttl_none_outlives_the_default(self, make_memory_store: MakeMemoryStore) -> None:
        """ttl=None never expires, even with a default_ttl; DEFAULT_TTL (or no ttl) takes it."""
        store = make_memory_store(default_ttl=0.05)
        forever = await store.aput(("m",), "forever", {"v": 1}, ttl=None)
        await store.aput(("m",), "omitted", {"v": 1})
        assert forever.expires_at is None
        await asyncio.sleep(0.15)
        assert await found(store) == ["forever"]
        asked = await store.aput(("m",), "asked", {"v": 1}, ttl=DEFAULT_TTL)
        assert asked.expires_at == pytest.approx(asked.updated_at + 0.05)
        with pytest.raises(ConfigError, match="ttl must be"):
            await store.aput(("m",), "k", {"v": 1}, ttl="default")  # type: ignore[arg-type]

    async def test_sweep_expired_is_bounded(self, store: MemoryStore) -> None:
        """asweep_expired(limit) deletes at most limit expired items, never a live one."""
        for index in range(5):
            await store.aput(("m",), f"old{index}", {"v": index}, ttl=0.01, user_id=f"u{index}")
        await store.aput(("m",), "live", {"v": 1}, ttl=3600)
        await asyncio.sleep(0.05)
        assert [await store.asweep_expired(limit=2) for _ in range(4)] == [2, 2, 1, 0]
        assert await store.alist_tenants() == ["default"]
        assert await found(store) == ["live"]
        with pytest.raises(ConfigError, match="limit must be an int"):
            await store.asweep_expired(limit=-1)

    async def test_background_sweeper(self, make_memory_store: MakeMemoryStore) -> None:
        """With sweep_interval, expired items are deleted with no read; aclose stops it."""
        with pytest.raises(ConfigError, match="sweep_interval must be"):
            make_memory_store(sweep_interval=0)
        with pytest.raises(ConfigError, match="sweep_limit must be"):
            make_memory_store(sweep_interval=1, sweep_limit=0)
        store = make_memory_store(sweep_interval=0.02, sweep_limit=2)
        for index in range(5):
            await store.aput(("m",), f"k{index}", {"v": index}, ttl=0.01, user_id="gone")
        await store.aput(("m",), "kept", {"v": 1})
        deadline = time.monotonic() + 30  # a loaded machine may be slow to schedule the thread
        for _ in range(100_000):  # polled: the thread tells the test nothing
            if "gone" not in await store.alist_tenants() or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        assert await store.alist_tenants() == ["default"]  # no read of "gone" ran
        await store.aclose()
        names = [thread.name for thread in threading.enumerate()]
        assert "tenxgraph-memory-sweeper" not in names
