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


def test_looking_does_not_restart_ttls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "app.db")
    with SqliteMemoryStore(db) as store:
        put = store.put(("notes",), "n1", {"text": "tea"}, ttl=3600)
    assert main(["memory", "search", "tea", "--db", db, "--json"]) == 0
    assert main(["memory", "ls", "--db", db, "--json"]) == 0
    shown = [json.loads(line)["expires_at"] for line in capsys.readouterr().out.splitlines()]
    assert shown == [put.expires_at, put.expires_at]
    with SqliteMemoryStore(db) as store:
        kept = store.get(("notes",), "n1", refresh_ttl=False)
        assert kept is not None and kept.expires_at == put.expires_at


@pytest.mark.postgres
def test_ls_search_rm_on_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    """The same commands on a Postgres DSN (a database of its own: the CLI uses the default
    schema ``tenxgraph``, which the shared server's other users may hold)."""
    import uuid

    import psycopg

    from tenxgraph.storage.longterm import PgMemoryStore
    from tests.storage.conftest import PG_DSN

    name = f"tg_memory_cli_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    dsn = PG_DSN.rsplit("/", 1)[0] + "/" + name
    try:
        with PgMemoryStore(dsn) as store:
            fill(store)
        assert main(["memory", "ls", "users", "--db", dsn, "--user", "ana"]) == 0
        out = capsys.readouterr().out
        assert "users/prefs  drink" in out and "lives in Oslo" in out and "n1" not in out
        assert main(["memory", "search", "tea", "--db", dsn, "--user", "ana", "--json"]) == 0
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert {line["key"] for line in lines} == {"drink", "n1"}
        assert main(["memory", "rm", "users/prefs", "drink", "--db", dsn, "--user", "ana"]) == 0
        assert "deleted users/prefs drink" in capsys.readouterr().out
        assert main(["memory", "rm", "users/prefs", "drink", "--db", dsn, "--user", "ana"]) == 1
        assert "no memory users/prefs drink for user ana" in capsys.readouterr().err
        with PgMemoryStore(dsn) as store:
            assert store.get(("users", "prefs"), "drink", user_id="ana") is None
            bob = store.get(("users", "prefs"), "drink", user_id="bob")
            assert bob is not None and bob.value == {"text": "coffee"}
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
