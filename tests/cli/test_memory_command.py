"""``tenxgraph memory ls/search/rm`` on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenxgraph.cli.main import main
from tenxgraph.storage.longterm import MemoryStore, SqliteMemoryStore


def fill(store: MemoryStore) -> None:
    store.put(("users", "prefs"), "drink", {"text": "green tea"}, user_id="ana")
    store.put(("users", "prefs"), "city", {"text": "lives in Oslo"}, user_id="ana")
    store.put(("notes",), "n1", {"text": "asked about tea"}, user_id="ana")
    store.put(("users", "prefs"), "drink", {"text": "coffee"}, user_id="bob")


def test_ls_search_rm_on_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "app.db")
    with SqliteMemoryStore(db) as store:
        fill(store)
    assert main(["memory", "ls", "users", "--db", db, "--user", "ana"]) == 0
    out = capsys.readouterr().out
    assert "users/prefs  drink" in out and "lives in Oslo" in out and "n1" not in out
    assert main(["memory", "search", "tea", "--db", db, "--user", "ana", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["key"] for line in lines} == {"drink", "n1"}
    assert all(line["score"] is not None for line in lines)
    assert main(["memory", "rm", "users/prefs", "drink", "--db", db, "--user", "ana"]) == 0
    assert "deleted users/prefs drink" in capsys.readouterr().out
    assert main(["memory", "rm", "users/prefs", "drink", "--db", db, "--user", "ana"]) == 1
    assert "no memory users/prefs drink for user ana" in capsys.readouterr().err
    with SqliteMemoryStore(db) as store:
        bob = store.get(("users", "prefs"), "drink", user_id="bob")
        assert bob is not None and bob.value == {"text": "coffee"}  # another tenant untouched


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "ls", "--db", str(tmp_path / "missing.db")]) == 1
    assert "no database at" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()
    db = str(tmp_path / "app.db")
    SqliteMemoryStore(db).close()
    with SqliteMemoryStore(db) as store:
        store.put(("a",), "k", {"v": 1})
    assert main(["memory", "rm", "a//b", "k", "--db", db]) == 1
    assert "namespace part 1 must not be empty" in capsys.readouterr().err
