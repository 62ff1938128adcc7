"""The long-term memory store conformance suite: a pytest base class every backend's tests subclass.

Subclass ``MemoryStoreContract`` in a test module (the class name must start
with ``Test`` for pytest to collect it) and give it a ``make_memory_store``
fixture returning a factory ``(**options) -> MemoryStore`` for your backend::

    class TestMyMemoryStore(MemoryStoreContract):
        @pytest_asyncio.fixture
        async def make_memory_store(self, tmp_path):
            made = []

            def make(**options):
                made.append(MyMemoryStore(tmp_path / "memory.db", **options))
                return made[-1]

            yield make
            for store in made:
                await store.aclose()

The storage must start empty. The options the suite passes are
``default_ttl``, ``max_value_bytes``, ``embedder``, ``vector_scan``,
``refresh_on_read``, ``sweep_interval`` and ``sweep_limit``, the
``MemoryStore`` constructor's (vector tests use ``HashingEmbedder``, which
needs no model).
The words the suite searches for are plain English words that no stemmer
or stop-word list changes the meaning of, so stemming backends pass too.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

import pytest

from tenxgraph import _sync
from tenxgraph.errors import ConfigError, InvalidIdError
from tenxgraph.storage.longterm import MemoryItem, MemoryStore
from tenxgraph.storage.longterm.embedding import Embedder, HashingEmbedder
from tenxgraph.testing.memory_store_options import StoreOptionsContract

__all__ = ["MakeMemoryStore", "MemoryStoreContract"]

MakeMemoryStore = Callable[..., MemoryStore]
"""Opens a memory store of the backend under test: ``make_memory_store(**options)``."""

PREFS = ("users", "prefs")


async def keys(store: MemoryStore, prefix: tuple[str, ...] = (), **options: object) -> list[str]:
    """The keys a search returns, in order."""
    return [item.key for item in await store.asearch(prefix, **options)]  # type: ignore[arg-type]


async def read_outlives_unread(store: MemoryStore, **search: object) -> list[str]:
    """Put ``read`` and ``unread`` (green tea, ttl 0.8 s), read one halfway, search past 0.8 s.

    Returns the keys the search (``search``: its options) finds under
    ``PREFS``; a store that restarts a read item's ttl finds ``["read"]``.
    """
    await store.aput(("other",), "first", {"text": "x"})  # connects (Postgres), finds an index
    await store.aput(PREFS, "read", {"text": "green tea"}, ttl=0.8)
    await store.aput(PREFS, "unread", {"text": "green tea"}, ttl=0.8)
    await asyncio.sleep(0.45)
    assert await store.aget(PREFS, "read") is not None
    await asyncio.sleep(0.45)  # 0.9 s after the puts
    return await keys(store, PREFS, **search)


class _Broken(Embedder):
    """An embedder that returns vectors of the wrong length."""

    dimensions = 8

    async def aembed(self, texts: object) -> list[list[float]]:
        return [[1.0] * 3]


class VectorSearchContract:
    """Vector and hybrid search, through ``HashingEmbedder`` (part of ``MemoryStoreContract``).

    A store whose ``vector_index`` is set answers from its index; the
    results are the same, but for the ``vector_scan`` bound, which only the
    brute-force scan has.
    """

    @pytest.fixture
    def store(self, make_memory_store: MakeMemoryStore) -> MemoryStore:
        """A store of the backend under test, with default options."""
        return make_memory_store()

    @pytest.fixture
    def vstore(self, make_memory_store: MakeMemoryStore) -> MemoryStore:
        """A store with an embedder."""
        return make_memory_store(embedder=HashingEmbedder(256))

    async def test_vector_mode_ranks_by_similarity(self, vstore: MemoryStore) -> None:
        """The nearest vectors come first; items sharing nothing score about 0."""
        await vstore.aput(PREFS, "tea", {"text": "drinks green tea every morning"})
        await vstore.aput(PREFS, "city", {"text": "lives in Lisbon near the river"})
        await vstore.aput(PREFS, "food", {"text": "eats green salad at noon"})
        found = await vstore.asearch(query="green tea morning", mode="vector", limit=3)
        assert [item.key for item in found][:2] == ["tea", "food"]
        assert found[0].score is not None and found[0].score > 0.5
        assert len(found) == 3  # vector search ranks everything it covers

    async def test_hybrid_fuses_both_rankings(self, vstore: MemoryStore) -> None:
        """Auto mode with an embedder is hybrid: reciprocal-rank scores, both lists' items."""
        await vstore.aput(PREFS, "a", {"text": "green tea"})
        await vstore.aput(PREFS, "b", {"text": "black coffee"})
        found = await vstore.asearch(query="green tea", limit=5)
        assert found[0].key == "a"
        assert all(item.score is not None and item.score <= 2 / 61 for item in found)
        lexical = await vstore.asearch(query="green tea", mode="lexical")
        assert [item.key for item in lexical] == ["a"]

    async def test_vectors_respect_tenant_filter_and_expiry(self, vstore: MemoryStore) -> None:
        """Vector search covers the same items a lexical search would."""
        await vstore.aput(PREFS, "mine", {"text": "green tea", "kind": "drink"}, user_id="ana")
        await vstore.aput(PREFS, "theirs", {"text": "green tea"}, user_id="bob")
        await vstore.aput(PREFS, "old", {"text": "green tea"}, user_id="ana", ttl=0.02)
        await vstore.aput(("other",), "out", {"text": "green tea"}, user_id="ana")
        await asyncio.sleep(0.05)
        found = await keys(vstore, PREFS, query="green tea", mode="vector", user_id="ana")
        assert found == ["mine"]
        assert (
            await keys(vstore, query="tea", mode="vector", filter={"kind": "x"}, user_id="ana")
            == []
        )

    async def test_vector_scan_bounds_the_newest(self, make_memory_store: MakeMemoryStore) -> None:
        """A brute-force search scores at most vector_scan vectors, the newest; an index all."""
        store = make_memory_store(embedder=HashingEmbedder(64), vector_scan=2)
        for key in ["k1", "k2", "k3"]:
            await store.aput(PREFS, key, {"text": "same words"})
            await asyncio.sleep(0.002)
        found = sorted(await keys(store, query="same words", mode="vector"))
        assert found == (["k2", "k3"] if store.vector_index is None else ["k1", "k2", "k3"])

    async def test_vectors_follow_a_refreshed_ttl(self, vstore: MemoryStore) -> None:
        """A read that restarts an item's ttl keeps it in vector search too."""
        assert await read_outlives_unread(vstore, query="green tea", mode="vector") == ["read"]

    async def test_replaced_and_deleted_values_leave_the_vectors(self, vstore: MemoryStore) -> None:
        """A replaced value is found by its new words only; a deleted or purged item not at all."""
        await vstore.aput(PREFS, "a", {"text": "green tea"})
        await vstore.aput(PREFS, "b", {"text": "red wine"})
        await vstore.aput(PREFS, "c", {"text": "blue sky"}, ttl=0.02)
        await vstore.aput(PREFS, "a", {"text": "blue sky"})
        await asyncio.sleep(0.05)
        assert await keys(vstore, query="blue sky", mode="vector", limit=1) == ["a"]
        assert await vstore.apurge_expired() == 1
        assert await vstore.adelete(PREFS, "a")
        found = await vstore.asearch(query="blue sky", mode="vector")
        assert [item.key for item in found] == ["b"]
        assert found[0].score is not None and found[0].score < 0.5
        await vstore.aput(PREFS, "a", {"text": "blue sky again"})  # the same key, a new item
        assert await keys(vstore, query="blue sky", mode="vector", limit=1) == ["a"]

    async def test_modes_are_checked(self, store: MemoryStore, vstore: MemoryStore) -> None:
        """Vector modes need an embedder; an unknown mode is refused."""
        with pytest.raises(ConfigError, match="needs a store made with an embedder"):
            await store.asearch(query="tea", mode="vector")
        with pytest.raises(ConfigError, match="mode must be"):
            await vstore.asearch(query="tea", mode="semantic")  # type: ignore[arg-type]

    async def test_a_bad_embedder_stores_nothing(self, make_memory_store: MakeMemoryStore) -> None:
        """An embedder returning the wrong length fails the put before anything is stored."""
        store = make_memory_store(embedder=_Broken())
        with pytest.raises(ConfigError, match="returned 3 numbers, not 8"):
            await store.aput(PREFS, "k", {"text": "tea"})
        assert await store.asearch() == []


class MemoryStoreContract(StoreOptionsContract, VectorSearchContract):
    """What every memory store does, as pytest test methods.

    The subclass provides the ``make_memory_store`` fixture; the suite's
    ``store`` fixture is ``make_memory_store()``.
    """

    pytestmark = [pytest.mark.asyncio]

    async def test_put_then_get(self, store: MemoryStore) -> None:
        """A put value reads back whole, with its namespace and timestamps."""
        value = {"text": "likes green tea", "stars": 4.5, "tags": ["drink", None], "ok": True}
        put = await store.aput(PREFS, "drink", value)
        got = await store.aget(PREFS, "drink")
        assert got == put
        assert got is not None and got.value == value and got.namespace == PREFS
        assert got.created_at == got.updated_at and got.expires_at is None and got.score is None
        assert await store.aget(PREFS, "food") is None
        assert await store.aget(("users",), "drink") is None

    async def test_put_replaces_keeping_created_at(self, store: MemoryStore) -> None:
        """A second put replaces the value and its index; created_at stays."""
        first = await store.aput(PREFS, "drink", {"text": "coffee"})
        second = await store.aput(PREFS, "drink", {"text": "tea"})
        got = await store.aget(PREFS, "drink")
        assert got is not None and got.value == {"text": "tea"}
        assert got.created_at == first.created_at and got.updated_at == second.updated_at
        assert got.updated_at >= first.updated_at
        assert await keys(store) == ["drink"]
        assert await keys(store, query="coffee") == []

    async def test_unicode_and_nested_values_round_trip(self, store: MemoryStore) -> None:
        """Non-ASCII namespaces, keys and nested values survive."""
        value = {"name": "Zoë 🐍 日本", "nested": {"deep": [1, 2.5, {"x": "y"}]}, "empty": {}}
        await store.aput(("ünï", "çødé"), "ключ", value)
        got = await store.aget(("ünï", "çødé"), "ключ")
        assert got is not None and got.value == value
        assert await store.alist_namespaces() == [("ünï", "çødé")]

    async def test_delete(self, store: MemoryStore) -> None:
        """A deleted item is gone from get, search and the namespace list."""
        await store.aput(PREFS, "drink", {"text": "tea"})
        assert await store.adelete(PREFS, "drink") is True
        assert await store.adelete(PREFS, "drink") is False
        assert await store.aget(PREFS, "drink") is None
        assert await keys(store, query="tea") == [] and await keys(store) == []
        assert await store.alist_namespaces() == []

    async def test_prefix_covers_whole_parts_only(self, store: MemoryStore) -> None:
        """A prefix matches whole parts: ('users',) never covers ('users2',)."""
        for namespace, key in [
            (("users",), "a"),
            (("users", "prefs"), "b"),
            (("users", "prefs", "deep"), "c"),
            (("users2",), "d"),
            (("users-x",), "e"),
            (("other", "users"), "f"),
        ]:
            await store.aput(namespace, key, {"text": "garden"})
        assert sorted(await keys(store, ("users",))) == ["a", "b", "c"]
        assert sorted(await keys(store, ("users",), query="garden")) == ["a", "b", "c"]
        assert sorted(await keys(store, ("users", "prefs"))) == ["b", "c"]
        assert sorted(await keys(store, limit=100)) == ["a", "b", "c", "d", "e", "f"]
        assert await keys(store, ("user",)) == []

    async def test_list_namespaces(self, store: MemoryStore) -> None:
        """Namespaces are listed sorted, under a prefix, cut to max_depth and paged."""
        for namespace in [("a", "x"), ("a", "y", "z"), ("b",), ("ab",)]:
            await store.aput(namespace, "k", {"v": 1})
        assert await store.alist_namespaces() == [("a", "x"), ("a", "y", "z"), ("ab",), ("b",)]
        assert await store.alist_namespaces(("a",)) == [("a", "x"), ("a", "y", "z")]
        assert await store.alist_namespaces(max_depth=1) == [("a",), ("ab",), ("b",)]
        assert await store.alist_namespaces(("a",), max_depth=2) == [("a", "x"), ("a", "y")]
        assert await store.alist_namespaces(limit=2, offset=1) == [("a", "y", "z"), ("ab",)]

    async def test_query_ranks_matching_items_first(self, store: MemoryStore) -> None:
        """A query returns only matching items, the best match first."""
        await store.aput(PREFS, "drink", {"text": "prefers green tea in the morning"})
        await store.aput(PREFS, "food", {"text": "vegetarian, loves spicy curry"})
        await store.aput(PREFS, "city", {"text": "lives in Lisbon"})
        await store.aput(PREFS, "tea2", {"text": "tea tea tea", "note": "curry"})
        assert (await keys(store, query="vegetarian curry"))[0] == "food"
        assert set(await keys(store, query="vegetarian curry")) == {"food", "tea2"}
        assert await keys(store, query="Lisbon") == ["city"]
        assert await keys(store, query="LISBON!!") == ["city"]
        assert await keys(store, query="submarine") == []
        assert await keys(store, query="  ?! ") == []
        found = await store.asearch(query="Lisbon")
        assert found[0].score is not None and math.isfinite(found[0].score)

    async def test_field_names_are_not_searched(self, store: MemoryStore) -> None:
        """Lexical search looks at string values, not at field names."""
        await store.aput(PREFS, "a", {"garden": "roses"})
        assert await keys(store, query="garden") == []
        assert await keys(store, query="roses") == ["a"]

    async def test_without_query_newest_first_and_paged(self, store: MemoryStore) -> None:
        """Without a query the newest updated items come first."""
        for key in ["k1", "k2", "k3", "k4"]:
            await store.aput(PREFS, key, {"text": "same"})
            await asyncio.sleep(0.002)  # distinct updated_at
        assert await keys(store) == ["k4", "k3", "k2", "k1"]
        assert await keys(store, limit=2) == ["k4", "k3"]
        assert await keys(store, limit=2, offset=2) == ["k2", "k1"]
        assert await keys(store, limit=0) == []
        await store.aput(PREFS, "k1", {"text": "same"})
        assert (await keys(store))[0] == "k1"

    async def test_filter(self, store: MemoryStore) -> None:
        """Filters compare top-level fields with JSON scalars, true apart from 1."""
        await store.aput(PREFS, "a", {"kind": "drink", "n": 1, "ok": True, "x": None})
        await store.aput(PREFS, "b", {"kind": "food", "n": 1.0, "ok": 1, "text": "drink"})
        await store.aput(PREFS, "c", {"kind": "drink", "n": 2, "ok": False, "x": "none"})
        assert sorted(await keys(store, filter={"kind": "drink"})) == ["a", "c"]
        assert sorted(await keys(store, filter={"n": 1})) == ["a", "b"]
        assert await keys(store, filter={"ok": True}) == ["a"]
        assert await keys(store, filter={"ok": 1}) == ["b"]
        assert await keys(store, filter={"x": None}) == ["a"]
        assert await keys(store, filter={"kind": "drink", "n": 2}) == ["c"]
        assert await keys(store, filter={"missing": "drink"}) == []
        assert await keys(store, query="drink", filter={"kind": "food"}) == ["b"]

    async def test_tenants_are_apart(self, store: MemoryStore) -> None:
        """One tenant never reads, finds, lists or deletes another's items."""
        await store.aput(PREFS, "drink", {"text": "tea"}, user_id="alice")
        await store.aput(PREFS, "drink", {"text": "coffee"}, user_id="bob")
        alice = await store.aget(PREFS, "drink", user_id="alice")
        assert alice is not None and alice.value == {"text": "tea"}
        assert await store.aget(PREFS, "drink") is None  # the default tenant has nothing
        assert await keys(store, query="coffee", user_id="alice") == []
        assert await keys(store, query="coffee", user_id="bob") == ["drink"]
        assert await store.alist_namespaces(user_id="carol") == []
        assert await store.adelete(PREFS, "drink", user_id="carol") is False
        assert await store.adelete(PREFS, "drink", user_id="alice") is True
        bob = await store.aget(PREFS, "drink", user_id="bob")
        assert bob is not None and bob.value == {"text": "coffee"}
        assert await store.alist_tenants() == ["bob"]

    async def test_ttl_hides_then_purge_deletes(self, store: MemoryStore) -> None:
        """Expired items are invisible at once and purged for good later."""
        await store.aput(PREFS, "short", {"text": "ephemeral"}, ttl=0.05)
        kept = await store.aput(PREFS, "long", {"text": "ephemeral"}, ttl=3600)
        assert kept.expires_at is not None and kept.expires_at >= kept.updated_at + 3599
        await asyncio.sleep(0.1)
        assert await store.aget(PREFS, "short") is None
        assert await keys(store, query="ephemeral") == ["long"]
        assert await keys(store) == ["long"]
        assert await store.adelete(PREFS, "short") is False  # expired: it was not there
        await store.aput(("gone",), "x", {"v": 1}, ttl=0.01)
        await asyncio.sleep(0.05)
        assert await store.alist_namespaces() == [PREFS]
        assert await store.apurge_expired() == 1
        assert await store.apurge_expired() == 0
        assert await keys(store) == ["long"]

    async def test_put_over_an_expired_item_starts_afresh(self, store: MemoryStore) -> None:
        """Putting over an expired item makes a new one."""
        first = await store.aput(PREFS, "k", {"v": 1}, ttl=0.02)
        await asyncio.sleep(0.05)
        second = await store.aput(PREFS, "k", {"v": 2})
        assert second.created_at > first.created_at and second.expires_at is None
        got = await store.aget(PREFS, "k")
        assert got is not None and got.created_at == second.created_at

    async def test_default_ttl(self, make_memory_store: MakeMemoryStore) -> None:
        """The store's default_ttl applies when a put gives none."""
        store = make_memory_store(default_ttl=0.05)
        await store.aput(PREFS, "k", {"v": 1})
        await store.aput(PREFS, "kept", {"v": 1}, ttl=3600)
        await asyncio.sleep(0.1)
        assert await keys(store) == ["kept"]

    async def test_reads_start_the_ttl_again(self, store: MemoryStore) -> None:
        """By default get and search restart a returned item's ttl; refresh_ttl=False does not."""
        put = await store.aput(PREFS, "k", {"text": "green tea"}, ttl=60)
        await store.aput(PREFS, "forever", {"text": "green tea"})
        assert put.expires_at is not None
        await asyncio.sleep(0.02)
        got = await store.aget(PREFS, "k")
        assert got is not None and got.expires_at is not None
        assert got.expires_at == pytest.approx(time.time() + 60, abs=1)
        assert got.expires_at > put.expires_at
        await asyncio.sleep(0.02)
        found = {item.key: item.expires_at for item in await store.asearch(query="tea")}
        assert found["forever"] is None
        assert found["k"] is not None and found["k"] > got.expires_at
        kept = await store.aget(PREFS, "k", refresh_ttl=False)
        assert kept is not None and kept.expires_at == pytest.approx(found["k"])  # it was stored
        with pytest.raises(ConfigError, match="refresh_ttl must be"):
            await store.aget(PREFS, "k", refresh_ttl="yes")  # type: ignore[arg-type]

    async def test_refresh_on_read_off(self, make_memory_store: MakeMemoryStore) -> None:
        """refresh_on_read=False: reads leave the ttl; refresh_ttl=True still restarts it."""
        store = make_memory_store(refresh_on_read=False)
        put = await store.aput(PREFS, "k", {"text": "green tea"}, ttl=60)
        await asyncio.sleep(0.02)
        read = await store.asearch(query="tea")
        assert [item.expires_at for item in read] == [put.expires_at]
        got = await store.aget(PREFS, "k", refresh_ttl=True)
        assert got is not None and got.expires_at is not None
        assert put.expires_at is not None and got.expires_at > put.expires_at

    async def test_a_refreshed_item_outlives_its_first_ttl(self, store: MemoryStore) -> None:
        """After a read, the item is still there when its first ttl is over; unread ones not."""
        assert await read_outlives_unread(store, query="tea", mode="lexical") == ["read"]

    @pytest.mark.parametrize(
        ("namespace", "message"),
        [
            ((), "at least one part"),
            (("users", ""), "part 1 must not be empty"),
            (("users/x",), "must not contain '/'"),
            ("users", "must be a tuple"),
            (("a", 3), "part 1 must be a str"),
            (("a\x00b",), "NUL"),
            (("x" * 129,), "over the limit of 128"),
            (tuple("abcdefghijklmnopq"), "17 parts"),
        ],
    )
    async def test_bad_namespace(self, store: MemoryStore, namespace: object, message: str) -> None:
        """A bad namespace is refused, naming the part, and nothing changes."""
        await store.aput(PREFS, "k", {"v": 1})
        with pytest.raises(InvalidIdError, match=message):
            await store.aput(namespace, "k", {"v": 2})  # type: ignore[arg-type]
        assert [item.value for item in await store.asearch()] == [{"v": 1}]

    @pytest.mark.parametrize(
        ("key", "message"),
        [("", "must not be empty"), ("k" * 257, "over the limit of 256"), (5, "must be a str")],
    )
    async def test_bad_key(self, store: MemoryStore, key: object, message: str) -> None:
        """A bad key is refused by put and get alike."""
        with pytest.raises(InvalidIdError, match=message):
            await store.aput(PREFS, key, {"v": 1})  # type: ignore[arg-type]
        with pytest.raises(InvalidIdError, match=message):
            await store.aget(PREFS, key)  # type: ignore[arg-type]
        assert await store.asearch() == []

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            (["not", "a", "dict"], "must be a dict"),
            ({"when": object()}, "plain JSON"),
            ({"x": math.nan}, "plain JSON"),
            ({1: "int key"}, "plain JSON"),
            ({"x": "nul\x00"}, "NUL"),
            ({"x": "\ud800"}, "surrogates"),
            ({"x": "y" * 300_000}, "over the limit"),
        ],
    )
    async def test_bad_value(self, store: MemoryStore, value: object, message: str) -> None:
        """A value that is not plain JSON is refused and the stored one stays."""
        await store.aput(PREFS, "k", {"v": 1})
        with pytest.raises(ConfigError, match=message):
            await store.aput(PREFS, "k", value)  # type: ignore[arg-type]
        got = await store.aget(PREFS, "k")
        assert got is not None and got.value == {"v": 1}

    async def test_max_value_bytes(self, make_memory_store: MakeMemoryStore) -> None:
        """Values over max_value_bytes are refused."""
        store = make_memory_store(max_value_bytes=100)
        await store.aput(PREFS, "k", {"x": "y" * 50})
        with pytest.raises(ConfigError, match="over the limit of 100"):
            await store.aput(PREFS, "k", {"x": "y" * 100})

    async def test_bad_search_arguments(self, store: MemoryStore) -> None:
        """Bad queries, limits, filters, ids and ttls are refused before any I/O."""
        with pytest.raises(ConfigError, match="over the limit of 2000"):
            await store.asearch(query="word " * 401)
        with pytest.raises(ConfigError, match="query must be a str"):
            await store.asearch(query=["tea"])  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="limit must be an int"):
            await store.asearch(limit=-1)
        with pytest.raises(ConfigError, match="limit must be an int"):
            await store.asearch(limit=1001)
        with pytest.raises(ConfigError, match="JSON scalar"):
            await store.asearch(filter={"tags": ["a"]})
        with pytest.raises(InvalidIdError, match="user_id must not be empty"):
            await store.asearch(user_id="")
        with pytest.raises(ConfigError, match="ttl must be"):
            await store.aput(PREFS, "k", {"v": 1}, ttl=-1)
        assert await store.asearch() == []

    async def test_sync_twins(self, store: MemoryStore) -> None:
        """The sync methods work from plain sync code in a thread."""

        def work() -> tuple[MemoryItem | None, list[MemoryItem], bool]:
            try:
                store.put(PREFS, "k", {"text": "hello world"}, user_id="u")
                return (
                    store.get(PREFS, "k", user_id="u"),
                    store.search(("users",), query="world", user_id="u"),
                    store.delete(PREFS, "k", user_id="u"),
                )
            finally:
                _sync._loop().close()  # the worker thread's private loop of the sync bridge

        got, found, deleted = await asyncio.to_thread(work)
        assert got is not None and got.value == {"text": "hello world"}
        assert [item.key for item in found] == ["k"] and deleted
