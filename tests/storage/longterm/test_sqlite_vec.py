"""SQLite's sqlite-vec index: the same answers as the brute-force scan, kept in step with the items.

The index lives in ``<file>.vec`` and is derived from the vectors stored with
the items; these tests change the items behind its back (another store
without the index, plain sqlite3) and check that searches stay right.
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pytest

from tenxgraph.errors import ConfigError
from tenxgraph.storage.longterm import HashingEmbedder, SqliteMemoryStore
from tenxgraph.storage.longterm._sqlite_vec import VecIndex, prefix_hashes
from tenxgraph.storage.longterm.embedding import pack

WORDS = [
    "tea",
    "coffee",
    "green",
    "black",
    "river",
    "city",
    "morning",
    "night",
    "cat",
    "dog",
    "blue",
    "red",
    "wine",
    "bread",
]


def _fill(store: SqliteMemoryStore, rng: random.Random, count: int) -> None:
    for index in range(count):
        namespace = ("m", f"n{index % 3}", "deep", f"d{index % 2}")
        text = " ".join(rng.choices(WORDS, k=5))
        store.put(namespace, f"k{index}", {"text": text, "odd": index % 2 == 1})


def test_index_and_scan_rank_alike(tmp_path: Path) -> None:
    """Over one file, the index and the scan return the same keys with the same scores."""
    embedder = HashingEmbedder(128)
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path, embedder=embedder, vector_index=True) as indexed:
        _fill(indexed, random.Random(3), 120)
        with SqliteMemoryStore(path, embedder=embedder, vector_index=False) as scanned:
            rng = random.Random(4)
            for prefix in [(), ("m",), ("m", "n1"), ("m", "n1", "deep"), ("m", "n1", "deep", "d0")]:
                query = " ".join(rng.choices(WORDS, k=2))
                got = indexed.search(prefix, query=query, mode="vector", limit=20)
                want = scanned.search(prefix, query=query, mode="vector", limit=20)
                assert [i.score for i in got] == pytest.approx([i.score for i in want], abs=1e-5)
                cut = (want[-1].score or 0.0) + 1e-5  # the last score may tie with unreturned items
                assert {i.key for i in got if (i.score or 0.0) > cut} == {
                    i.key for i in want if (i.score or 0.0) > cut
                }
                assert all(item.namespace[: len(prefix)] == prefix for item in got)


def test_items_written_without_the_index_are_found(tmp_path: Path) -> None:
    """A store opening the index brings it up to the items (added, replaced, deleted)."""
    embedder = HashingEmbedder(64)
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path, embedder=embedder, vector_index=True) as indexed:
        indexed.put(("m",), "gone", {"text": "green tea"})
        indexed.put(("m",), "changed", {"text": "green tea"})
    with SqliteMemoryStore(path, embedder=embedder, vector_index=False) as plain:
        plain.put(("m",), "new", {"text": "black coffee"})
        plain.put(("m",), "changed", {"text": "black coffee at night"})
        plain.delete(("m",), "gone")
    assert Path(str(path) + ".vec").exists()
    with SqliteMemoryStore(path, embedder=embedder) as again:
        assert again.vector_index == "sqlite-vec"
        found = again.search(query="black coffee", mode="vector")
        assert [item.key for item in found] == ["new", "changed"]


def test_a_ttl_restarted_without_the_index_is_followed_by_it(tmp_path: Path) -> None:
    """A read by a store without the index restarts the item's ttl; the index follows."""
    embedder = HashingEmbedder(64)
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path, embedder=embedder, vector_index=True) as indexed:
        indexed.put(("m",), "kept", {"text": "green tea"}, ttl=1.0)
    time.sleep(0.6)
    with SqliteMemoryStore(path, embedder=embedder, vector_index=False) as plain:
        assert plain.get(("m",), "kept") is not None  # refresh_on_read: 1 s from now
    time.sleep(0.6)  # past the first expiry, within the restarted one
    with SqliteMemoryStore(path, embedder=embedder) as again:
        assert again.vector_index == "sqlite-vec"
        found = again.search(query="green tea", mode="vector")
        assert [item.key for item in found] == ["kept"]


def test_an_index_row_without_its_item_is_never_returned(tmp_path: Path) -> None:
    """Rows deleted behind the index's back (another program) are dropped at search time."""
    embedder = HashingEmbedder(64)
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path, embedder=embedder, vector_index=True) as store:
        store.put(("m",), "a", {"text": "green tea"})
        store.put(("m",), "b", {"text": "green tea too"})
        store.search(query="tea", mode="vector")  # the index is open and in step
        with sqlite3.connect(path) as conn:
            conn.execute("DELETE FROM memory_items WHERE key = 'a'")
        assert [item.key for item in store.search(query="green tea", mode="vector")] == ["b"]


def test_an_older_write_never_replaces_a_newer_one(tmp_path: Path) -> None:
    """Index writes that arrive out of order keep the newest vector; removals too."""
    index = VecIndex(str(tmp_path / "i.vec"), 8, timeout=1.0)
    tea, wine = pack([1.0] + [0.0] * 7, 8), pack([0.0, 1.0] + [0.0] * 6, 8)
    assert tea is not None and wine is not None
    index.write([(1, "u", "m", None, 2.0, tea)])
    index.write([(1, "u", "m", None, 1.0, wine)])  # older: ignored
    index.remove([(1, 1.5)])  # a delete older than the write: ignored
    assert index.nearest("u", "m", 0.0, tea, 5) == [(1, pytest.approx(1.0))]
    assert index.nearest("u", "other", 0.0, tea, 5) == []
    assert index.nearest("v", "", 0.0, tea, 5) == []
    index.remove([(1, 2.0)])
    assert index.nearest("u", "", 0.0, tea, 5) == []
    index.close()


def test_prefix_hashes_name_whole_parts() -> None:
    assert prefix_hashes("a/b")[:2] == prefix_hashes("a/b/c")[:2]
    assert prefix_hashes("a/b")[2] == 0
    assert prefix_hashes("a")[0] != prefix_hashes("ab")[0]


def test_vector_index_true_needs_an_embedder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="vector_index=True needs an embedder"):
        SqliteMemoryStore(tmp_path / "m.db", vector_index=True)
    assert SqliteMemoryStore(tmp_path / "m.db").vector_index is None
