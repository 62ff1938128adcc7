"""SQLite specifics: a file shared with a checkpointer, two stores on one file."""

from __future__ import annotations

from pathlib import Path

from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.storage.longterm import SqliteMemoryStore


def test_shares_the_checkpointer_file(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with SqliteCheckpointer(path) as checkpointer, SqliteMemoryStore(path) as store:
        store.put(("prefs",), "tea", {"text": "green tea"})
        assert checkpointer.get_state({"thread_id": "t"}) is None
    with SqliteMemoryStore(path) as again:
        assert [item.key for item in again.search(query="tea")] == ["tea"]


def test_two_stores_on_one_file_see_each_other(tmp_path: Path) -> None:
    with SqliteMemoryStore(tmp_path / "m.db") as one, SqliteMemoryStore(tmp_path / "m.db") as two:
        one.put(("a",), "k", {"text": "first"})
        two.put(("a",), "k", {"text": "second"})
        got = one.get(("a",), "k")
        assert got is not None and got.value == {"text": "second"}
        assert [item.key for item in one.search(query="second")] == ["k"]
        assert one.search(query="first") == []  # the index row was replaced with the value
