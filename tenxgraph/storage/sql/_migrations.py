"""Ordered schema migrations per component: one runner for SQLite and Postgres.

A *component* is a group of tables that changes on its own schedule:
``threads`` (the checkpointers) today; the media store, long-term memory and
the run queue next. Each has an append-only tuple of migrations (each a tuple
of statements), and the table ``schema_versions (component, version,
applied_at)`` records which ones were applied. A database whose component is
newer than the code is refused with a ``StorageError`` naming both versions.

The runner is written once and does no I/O: ``prepare`` and ``migrate`` are
generators that yield ``(sql, params)`` and receive the rows, so SQLite drives
them synchronously (``run_sync``) and Postgres asynchronously (``run_async``).
Each backend runs them under its lock, so processes starting together take
turns and apply each migration exactly once: SQLite inside one ``BEGIN
IMMEDIATE``; Postgres ``prepare`` under the advisory transaction lock of the
schema and each component's ``migrate`` under the lock of schema and component.

Before ``schema_versions``, the thread tables' versions were recorded in a
table ``schema_version (version, applied_at)``. A component that names it as
its ``legacy_table`` adopts those rows (in ``prepare``, under the lock); the
old table is then left holding one row, version ``LEGACY_TOMBSTONE``, so a
tenxgraph release from before this table refuses the database as "newer than
this tenxgraph" instead of applying its first migration again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from tenxgraph.errors import ConfigError, StorageError

__all__ = ["LEGACY_TOMBSTONE", "Component", "Dialect", "Query", "Steps", "migrate", "prepare"]

Query = tuple[str, tuple[Any, ...]]
"""One statement and its parameters."""

Steps = Generator[Query, list[tuple[Any, ...]], None]
"""A runner: yields statements, receives each one's rows (empty when it returns none)."""

LEGACY_TOMBSTONE = 1_000_000
"""The version left in an adopted legacy table, above any real one."""

_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


@dataclass(frozen=True, slots=True)
class Component:
    """A group of tables with its own ordered migrations."""

    name: str
    """Its key in ``schema_versions`` (lowercase letters, digits, ``_``)."""
    migrations: tuple[tuple[str, ...], ...]
    """Ordered, append only; migration N is ``migrations[N - 1]``, one tuple of statements."""
    legacy_table: str | None = None
    """A ``(version, applied_at)`` table that recorded this component before ``schema_versions``."""

    def __post_init__(self) -> None:
        """Refuse a name that could not be a plain key."""
        if not _NAME.fullmatch(self.name):
            raise ConfigError(f"a component name must be lowercase [a-z0-9_], got {self.name!r}")


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the backends for the runner: names, placeholders, types."""

    where: str
    """The database, for error messages (``sqlite (path)``, ``postgres schema 'x'``)."""
    prefix: str
    """Put before a table name: ``""`` for SQLite, ``'"schema".'`` for Postgres."""
    param: str
    """The placeholder: ``?`` or ``%s``."""
    types: tuple[str, str]
    """The column types of a version number and of a timestamp."""
    schema: str | None
    """Postgres: the quoted schema, substituted for ``{schema}`` in migrations."""

    def render(self, statement: str) -> str:
        """A migration statement ready to run."""
        return statement if self.schema is None else statement.format(schema=self.schema)

    def table_exists(self, name: str) -> Query:
        """A query returning a row when table ``name`` exists."""
        if self.schema is None:
            return "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        return (
            "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s",
            (self.schema.strip('"'), name),
        )


def sqlite_dialect(where: str) -> Dialect:
    """The SQLite dialect (``where`` names the file in errors)."""
    return Dialect(where, "", "?", ("INTEGER", "REAL"), None)


def postgres_dialect(schema: str) -> Dialect:
    """The Postgres dialect for the (plain identifier) ``schema``."""
    return Dialect(
        f"postgres schema {schema!r}",
        f'"{schema}".',
        "%s",
        ("integer", "double precision"),
        f'"{schema}"',
    )


def prepare(dialect: Dialect, components: Sequence[Component]) -> Steps:
    """Create ``schema_versions`` if missing and adopt the components' legacy tables."""
    table, p = f"{dialect.prefix}schema_versions", dialect.param
    number, stamp = dialect.types
    yield (
        f"CREATE TABLE IF NOT EXISTS {table} (component TEXT NOT NULL, version {number} NOT NULL, "
        f"applied_at {stamp} NOT NULL, PRIMARY KEY (component, version))",
        (),
    )
    for component in components:
        if component.legacy_table is None or not (
            yield dialect.table_exists(component.legacy_table)
        ):
            continue
        legacy = f"{dialect.prefix}{component.legacy_table}"
        rows = yield (
            f"SELECT version, coalesce(applied_at, 0) FROM {legacy} WHERE version <> {p}",
            (LEGACY_TOMBSTONE,),
        )
        for version, applied_at in rows:
            yield (
                f"INSERT INTO {table} (component, version, applied_at) VALUES ({p}, {p}, {p}) "
                "ON CONFLICT DO NOTHING",
                (component.name, version, applied_at),
            )
        if rows:
            yield f"DELETE FROM {legacy}", ()
            yield (
                f"INSERT INTO {legacy} (version, applied_at) VALUES ({p}, {p})",
                (LEGACY_TOMBSTONE, time.time()),
            )


def migrate(dialect: Dialect, component: Component) -> Steps:
    """Apply the component's missing migrations, recording each; refuse a newer database."""
    table, p = f"{dialect.prefix}schema_versions", dialect.param
    rows = yield (
        f"SELECT coalesce(max(version), 0) FROM {table} WHERE component = {p}",
        (component.name,),
    )
    current, latest = int(rows[0][0]), len(component.migrations)
    if current > latest:
        raise StorageError(
            f"{dialect.where} is at {component.name} schema version {current}, newer than "
            f"this tenxgraph ({latest}); upgrade tenxgraph"
        )
    for number in range(current + 1, latest + 1):
        for statement in component.migrations[number - 1]:
            yield dialect.render(statement), ()
        yield (
            f"INSERT INTO {table} (component, version, applied_at) VALUES ({p}, {p}, {p})",
            (component.name, number, time.time()),
        )
