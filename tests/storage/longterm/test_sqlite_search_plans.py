"""SQLite search plans: the scope word left out for large scopes, and bounded candidates.

Both are shortcuts that must return exactly what the plain plan returns
(every match joined with its item); these tests force each shortcut on a
small store (``LARGE`` lowered, more matches than the candidate bound) and
compare with the plain answer.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tenxgraph.storage.longterm import SqliteMemoryStore
from tenxgraph.storage.longterm import _sqlite_scopes as scopes
from tenxgraph.storage.longterm._sqlite_scopes import scope_token


def _sizes(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT token, items FROM memory_scope_sizes").fetchall())


def _keys(store: SqliteMemoryStore, **options: object) -> list[tuple[str, float | None]]:
    return [(item.key, item.score) for item in store.search(**options)]  # type: ignore[arg-type]


def test_a_large_scope_searches_without_its_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[bool] = []
    real = scopes.use_scope_word

    def spy(conn: sqlite3.Connection, token: str) -> bool:
        chosen.append(real(conn, token))
        return chosen[-1]

    monkeypatch.setattr(scopes, "use_scope_word", spy)
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        for index in range(30):
            store.put(
                ("m", f"n{index % 3}"), f"a{index}", {"text": f"green tea {index}"}, user_id="ana"
            )
        for index in range(5):
            store.put(("m",), f"b{index}", {"text": "green tea"}, user_id="bob")
        searches = [
            {"query": "green tea", "user_id": "ana", "limit": 50},
            {"query": "tea", "user_id": "bob"},
            {"query": "tea", "user_id": "ana", "namespace_prefix": ("m", "n1")},
        ]
        plain = [_keys(store, **search) for search in searches]
        assert chosen == [True, True, True]
        monkeypatch.setattr(scopes, "LARGE", 10)
        chosen.clear()
        assert [_keys(store, **search) for search in searches] == plain
        assert chosen == [False, True, True]  # ana's 30 of 35: large; bob's 5, ana's n1: small
        assert len(plain[0]) == 30 and {key[0] for key in plain[1]} == {f"b{i}" for i in range(5)}


def test_candidates_that_fail_the_checks_fall_back_to_every_match(tmp_path: Path) -> None:
    """More matches than the candidate bound; the filter keeps only low-scoring ones."""
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        for index in range(100):  # short texts score higher: these are the best matches
            store.put(("m",), f"k{index:03d}", {"text": "tea", "kind": "common"})
        for index in range(3):
            long_text = "tea " + " ".join(f"filler{i}" for i in range(20 + index))
            store.put(("m",), f"rare{index}", {"text": long_text, "kind": "rare"})
        store.put(("m",), "gone", {"text": "tea"}, ttl=0.001)
        time.sleep(0.01)  # past its expiry, however fast the next calls come
        found = store.search(query="tea", filter={"kind": "rare"}, limit=2)
        assert [item.key for item in found] == ["rare0", "rare1"]
        assert store.get(("m",), "gone") is None
        everything = store.search(query="tea", limit=200)
        assert len(everything) == 103
        paged = store.search(query="tea", limit=10, offset=95)
        assert [item.key for item in paged] == [item.key for item in everything[95:105]]


def test_scope_sizes_follow_puts_deletes_and_purges(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    ana, prefs = scope_token("ana", ""), scope_token("ana", "users/prefs")
    with SqliteMemoryStore(path) as store:
        store.put(("users", "prefs"), "a", {"text": "x"}, user_id="ana")
        store.put(("users", "prefs"), "a", {"text": "y"}, user_id="ana")  # a replace: no change
        store.put(("users", "prefs"), "b", {"text": "x"}, user_id="ana", ttl=0.001)
        store.put(("other",), "c", {"text": "x"}, user_id="ana")
        time.sleep(0.01)  # b is past its expiry before the purge, however fast the calls come
        assert (_sizes(path)["*"], _sizes(path)[ana], _sizes(path)[prefs]) == (3, 3, 2)
        store.delete(("other",), "c", user_id="ana")
        assert store.purge_expired() == 1
        assert (_sizes(path)["*"], _sizes(path)[ana], _sizes(path)[prefs]) == (1, 1, 1)


def test_a_file_without_counts_gets_them_at_the_first_search(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path) as store:
        for index in range(4):
            store.put(("m",), f"k{index}", {"text": "tea"}, user_id="ana")
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM memory_scope_sizes")  # as a file written before they existed
    with SqliteMemoryStore(path) as store:
        assert len(store.search(query="tea", user_id="ana")) == 4
    sizes = _sizes(path)
    assert (sizes["*"], sizes[scope_token("ana", "m")], sizes["complete"]) == (4, 4, 1)


def test_bounded_candidates_return_what_joining_every_match_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenxgraph.storage.longterm import sqlite as backend

    answered: list[bool] = []
    real = backend._best_candidates

    def spy(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        answered.append(found is not None)
        return found

    with SqliteMemoryStore(tmp_path / "m.db") as store:
        for index in range(200):  # texts of many lengths and tea counts: many distinct scores
            words = ["tea"] * (1 + index % 4) + ["cup"] * (index % 7) + ["x"] * (index % 11)
            store.put(("m", f"n{index % 2}"), f"k{index:03d}", {"text": " ".join(words)})
        searches = [
            {"query": "tea", "limit": 5},
            {"query": "tea cup", "limit": 10, "offset": 7},
            {"query": "cup", "limit": 3, "namespace_prefix": ("m", "n1")},
        ]
        monkeypatch.setattr(backend, "_best_candidates", spy)
        fast = [_keys(store, **search) for search in searches]
        monkeypatch.setattr(backend, "_best_candidates", lambda *args: None)
        assert [_keys(store, **search) for search in searches] == fast
    assert answered == [True, True, True]
    assert [len(found) for found in fast] == [5, 10, 3]
