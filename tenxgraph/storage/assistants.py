"""Assistants: named, versioned presets of a graph (its config, context and metadata).

An assistant is what a client starts runs with instead of the graph's bare
id: the graph's id plus the config, context and metadata its runs get, a
name and a description. Every change is a new version; one version is the
latest, the one runs use (``set_latest`` may point back at an older one).
Assistants belong to the user who made them, as threads do.

``AssistantStore`` keeps them beside the graph's threads: in the SQLite file
of a ``SqliteCheckpointer`` (``SqliteAssistants``), the schema of a
``PgCheckpointer`` (``PgAssistants``) or in memory (``MemoryAssistants``).
Each assistant is one row holding its versions as JSON, changed in one
transaction; a user has few, so searching filters them in Python.
"""

from __future__ import annotations

import abc
import asyncio
import datetime as dt
import json
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tenxgraph.core.state.ids import check_id
from tenxgraph.errors import AlreadyExistsError
from tenxgraph.storage.sql import Component, SqliteDatabase

if TYPE_CHECKING:
    from tenxgraph.storage.sql import PgDatabase

__all__ = [
    "Assistant",
    "AssistantStore",
    "MemoryAssistants",
    "PgAssistants",
    "SqliteAssistants",
]

Json = dict[str, Any]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


@dataclass(frozen=True, slots=True)
class Assistant:
    """One version of an assistant."""

    assistant_id: str
    graph_id: str
    user_id: str
    version: int = 1
    name: str = ""
    description: str | None = None
    config: Json = field(default_factory=dict)
    context: Json = field(default_factory=dict)
    metadata: Json = field(default_factory=dict)
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)


Versions = dict[str, Any]
"""An assistant's row: ``{"latest": n, "versions": [Assistant as a dict, ...]}``."""
_Change = Callable[[Versions | None], Versions | None]


def _latest(row: Versions) -> Assistant:
    return Assistant(**next(v for v in row["versions"] if v["version"] == row["latest"]))


class AssistantStore(abc.ABC):
    """Versioned assistants over rows of ``(assistant_id, user_id, versions as JSON)``."""

    @abc.abstractmethod
    async def _read(self, user_id: str, assistant_id: str | None) -> dict[str, Versions]:
        """The user's rows (one, or all when ``assistant_id`` is None), by id."""

    @abc.abstractmethod
    async def _change(self, user_id: str, assistant_id: str, change: _Change) -> Versions | None:
        """Apply ``change`` to the row in one transaction (None: delete it); answer the result."""

    async def aget(self, user_id: str, assistant_id: str) -> Assistant | None:
        """The latest version, or None (``InvalidIdError`` for an id no backend can keep)."""
        check_id("assistant_id", assistant_id)
        row = (await self._read(user_id, assistant_id)).get(assistant_id)
        return _latest(row) if row is not None else None

    async def acreate(self, assistant: Assistant, *, if_exists: str = "raise") -> Assistant:
        """Store a new assistant (version 1); ``if_exists="do_nothing"`` answers the one there."""

        def create(row: Versions | None) -> Versions:
            if row is not None:
                if if_exists == "do_nothing":
                    return row
                raise AlreadyExistsError(
                    f"assistant {assistant.assistant_id!r} exists; update it, or pass "
                    "if_exists='do_nothing'"
                )
            return {"latest": 1, "versions": [asdict(replace(assistant, version=1))]}

        check_id("assistant_id", assistant.assistant_id)
        row = await self._change(assistant.user_id, assistant.assistant_id, create)
        assert row is not None
        return _latest(row)

    async def aupdate(
        self, user_id: str, assistant_id: str, changes: Mapping[str, Any]
    ) -> Assistant | None:
        """A new version with ``changes``, made the latest; None when there is no such assistant."""
        check_id("assistant_id", assistant_id)

        def update(row: Versions | None) -> Versions | None:
            if row is None:
                return None
            version = max(v["version"] for v in row["versions"]) + 1
            made = replace(_latest(row), **changes, version=version, updated_at=_now())
            return {"latest": version, "versions": [*row["versions"], asdict(made)]}

        row = await self._change(user_id, assistant_id, update)
        return _latest(row) if row is not None else None

    async def aset_latest(self, user_id: str, assistant_id: str, version: int) -> Assistant | None:
        """Make ``version`` the latest; None when there is no such assistant or version."""
        check_id("assistant_id", assistant_id)

        def point(row: Versions | None) -> Versions | None:
            if row is None or all(v["version"] != version for v in row["versions"]):
                return row
            return {**row, "latest": version}

        row = await self._change(user_id, assistant_id, point)
        return _latest(row) if row is not None and row["latest"] == version else None

    async def aversions(self, user_id: str, assistant_id: str) -> list[Assistant]:
        """Every version, newest first (empty: no such assistant)."""
        check_id("assistant_id", assistant_id)
        row = (await self._read(user_id, assistant_id)).get(assistant_id)
        versions = [Assistant(**v) for v in (row or {}).get("versions", [])]
        return sorted(versions, key=lambda a: a.version, reverse=True)

    async def adelete(self, user_id: str, assistant_id: str) -> bool:
        """Delete the assistant with its versions; False when there was none."""
        check_id("assistant_id", assistant_id)
        found: list[bool] = []

        def delete(row: Versions | None) -> None:
            found.append(row is not None)

        await self._change(user_id, assistant_id, delete)
        return found[0]

    async def asearch(self, user_id: str) -> list[Assistant]:
        """The user's assistants (latest versions), newest first."""
        rows = await self._read(user_id, None)
        return sorted((_latest(r) for r in rows.values()), key=lambda a: a.created_at, reverse=True)

    @abc.abstractmethod
    async def aclose(self) -> None:
        """Release the connections."""


class MemoryAssistants(AssistantStore):
    """Assistants in this process's memory (a graph without a SQL checkpointer)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Versions] = {}

    async def _read(self, user_id: str, assistant_id: str | None) -> dict[str, Versions]:
        return {
            a: row
            for (u, a), row in self._rows.items()
            if u == user_id and assistant_id in (None, a)
        }

    async def _change(self, user_id: str, assistant_id: str, change: _Change) -> Versions | None:
        row = change(self._rows.get((user_id, assistant_id)))
        if row is None:
            self._rows.pop((user_id, assistant_id), None)
        else:
            self._rows[(user_id, assistant_id)] = row
        return row

    async def aclose(self) -> None:
        """Nothing to release."""


_TABLE = """CREATE TABLE {schema}assistants (
    assistant_id text NOT NULL,
    user_id text NOT NULL,
    versions text NOT NULL,
    PRIMARY KEY (user_id, assistant_id)
)"""

SQLITE_ASSISTANTS = Component("assistants", ((_TABLE.replace("{schema}", ""),),))
PG_ASSISTANTS = Component("assistants", ((_TABLE.replace("{schema}", "{schema}."),),))


class SqliteAssistants(AssistantStore):
    """Assistants in a SQLite file (the graph's checkpointer file)."""

    def __init__(self, path: str, *, timeout: float = 5.0) -> None:
        self._db = SqliteDatabase(path, components=[SQLITE_ASSISTANTS], timeout=timeout)

    async def _read(self, user_id: str, assistant_id: str | None) -> dict[str, Versions]:
        def read(conn: sqlite3.Connection) -> dict[str, Versions]:
            rows = conn.execute(
                "SELECT assistant_id, versions FROM assistants WHERE user_id = ?"
                " AND (? IS NULL OR assistant_id = ?)",
                (user_id, assistant_id, assistant_id),
            ).fetchall()
            return {a: json.loads(v) for a, v in rows}

        return await asyncio.to_thread(self._db.run, read)

    async def _change(self, user_id: str, assistant_id: str, change: _Change) -> Versions | None:
        def apply() -> Versions | None:
            with self._db.transaction("IMMEDIATE") as conn:
                found = conn.execute(
                    "SELECT versions FROM assistants WHERE user_id = ? AND assistant_id = ?",
                    (user_id, assistant_id),
                ).fetchone()
                row = change(json.loads(found[0]) if found else None)
                if row is None:
                    conn.execute(
                        "DELETE FROM assistants WHERE user_id = ? AND assistant_id = ?",
                        (user_id, assistant_id),
                    )
                else:
                    conn.execute(
                        "INSERT OR REPLACE INTO assistants (assistant_id, user_id, versions)"
                        " VALUES (?, ?, ?)",
                        (assistant_id, user_id, json.dumps(row)),
                    )
                return row

        return await asyncio.to_thread(apply)

    async def aclose(self) -> None:
        """Close the file."""
        await asyncio.to_thread(self._db.close)


class PgAssistants(AssistantStore):
    """Assistants in a Postgres schema (the graph's checkpointer's)."""

    def __init__(self, conninfo: Any, *, schema: str = "tenxgraph") -> None:
        from tenxgraph.storage.sql import PgDatabase

        self._db: PgDatabase = PgDatabase(
            conninfo,
            components=[PG_ASSISTANTS],
            schema=schema,
            pool_min_size=1,
            pool_size=2,
            private_loop=False,
        )
        self._t = f"{self._db.s}.assistants"

    async def _read(self, user_id: str, assistant_id: str | None) -> dict[str, Versions]:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT assistant_id, versions FROM {self._t} WHERE user_id = %s"
                " AND (%s::text IS NULL OR assistant_id = %s) AND versions <> ''",
                [user_id, assistant_id, assistant_id],
            )
            return {a: json.loads(v) for a, v in await cursor.fetchall()}

    async def _change(self, user_id: str, assistant_id: str, change: _Change) -> Versions | None:
        async with self._db.connection(transaction=True) as conn:
            await conn.execute(
                f"INSERT INTO {self._t} (assistant_id, user_id, versions) VALUES (%s, %s, '')"
                " ON CONFLICT DO NOTHING",
                [assistant_id, user_id],
            )  # a row to lock, even for a new assistant; removed below when it stays empty
            cursor = await conn.execute(
                f"SELECT versions FROM {self._t} WHERE user_id = %s AND assistant_id = %s"
                " FOR UPDATE",
                [user_id, assistant_id],
            )
            found = await cursor.fetchone()
            row = change(json.loads(found[0]) if found and found[0] else None)
            if row is None:
                await conn.execute(
                    f"DELETE FROM {self._t} WHERE user_id = %s AND assistant_id = %s",
                    [user_id, assistant_id],
                )
            else:
                await conn.execute(
                    f"UPDATE {self._t} SET versions = %s WHERE user_id = %s AND assistant_id = %s",
                    [json.dumps(row), user_id, assistant_id],
                )
            return row

    async def aclose(self) -> None:
        """Close the connections."""
        await self._db.aclose()
