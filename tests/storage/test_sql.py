"""The SQL layer: migrations per component, each recorded apart, refused when newer, atomic."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tenxgraph.errors import ConfigError, StorageError
from tenxgraph.storage.sql import Component, PgDatabase, SqliteDatabase
from tests.storage.conftest import PG_DSN, drop_schema

NOTES = Component("notes", (("CREATE TABLE {p}notes (id INTEGER PRIMARY KEY, body TEXT)",),))
TAGS = Component(
    "tags",
    (
        ("CREATE TABLE {p}tags (name TEXT PRIMARY KEY)",),
        ("ALTER TABLE {p}tags ADD COLUMN color TEXT",),
    ),
)


def for_sqlite(component: Component) -> Component:
    migrations = tuple(tuple(s.replace("{p}", "") for s in m) for m in component.migrations)
    return Component(component.name, migrations)


def for_postgres(component: Component) -> Component:
    migrations = tuple(
        tuple(s.replace("{p}", "{schema}.") for s in m) for m in component.migrations
    )
    return Component(component.name, migrations)


def test_each_component_is_migrated_and_recorded_apart(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    db = SqliteDatabase(path, components=[for_sqlite(NOTES)], timeout=5)
    with db.transaction("IMMEDIATE") as conn:
        conn.execute("INSERT INTO notes (body) VALUES ('kept')")
    db.close()
    db = SqliteDatabase(path, components=[for_sqlite(NOTES), for_sqlite(TAGS)], timeout=5)
    with db.connection() as conn:
        assert conn.execute("SELECT body FROM notes").fetchall() == [("kept",)]
        conn.execute("INSERT INTO tags (name, color) VALUES ('a', 'red')")
        applied = conn.execute(
            "SELECT component, version FROM schema_versions ORDER BY component, version"
        ).fetchall()
    db.close()
    assert applied == [("notes", 1), ("tags", 1), ("tags", 2)]


def test_a_newer_component_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    db = SqliteDatabase(path, components=[for_sqlite(TAGS)], timeout=5)
    with db.connection():
        pass
    db.close()
    older = Component("tags", for_sqlite(TAGS).migrations[:1])
    db = SqliteDatabase(path, components=[older], timeout=5)
    refused = pytest.raises(
        StorageError, match="at tags schema version 2, newer than this tenxgraph"
    )
    with refused, db.connection():
        pass


def test_a_failed_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    broken = Component("notes", (("CREATE TABLE notes (id INTEGER)", "NOT SQL"),))
    db = SqliteDatabase(path, components=[broken], timeout=5)
    with pytest.raises(StorageError, match="syntax error"), db.connection():
        pass
    with sqlite3.connect(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "notes" not in tables and "schema_versions" not in tables


def test_component_names_are_plain_keys() -> None:
    with pytest.raises(ConfigError, match="component name"):
        Component("Threads; DROP", ())


@pytest.mark.postgres
async def test_postgres_components_are_migrated_and_refused_alike(pg_schema: str) -> None:
    import psycopg

    db = PgDatabase(PG_DSN, components=[for_postgres(NOTES), for_postgres(TAGS)], schema=pg_schema)
    older = PgDatabase(
        PG_DSN, components=[Component("tags", for_postgres(TAGS).migrations[:1])], schema=pg_schema
    )
    try:
        async with db.connection(transaction=True) as conn:
            await conn.execute(
                f'INSERT INTO "{pg_schema}".tags (name, color) VALUES (%s, %s)', ("a", "red")
            )
        await db.aclose()
        async with await psycopg.AsyncConnection.connect(PG_DSN) as conn:
            cursor = await conn.execute(
                f'SELECT component, version FROM "{pg_schema}".schema_versions '
                "ORDER BY component, version"
            )
            assert await cursor.fetchall() == [("notes", 1), ("tags", 1), ("tags", 2)]
        with pytest.raises(StorageError, match="at tags schema version 2, newer"):
            async with older.connection():
                pass
    finally:
        await older.aclose()
        await drop_schema(pg_schema)
