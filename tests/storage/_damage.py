"""Damage stored rows behind a checkpointer's back, the same way on every backend.

Memory rows are changed in the instance's dicts, SQLite and Postgres rows
with SQL on a connection of their own; with Redis the cached copy is
dropped, so the next load reads the damaged row (a cold cache).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tenxgraph.core.state import ThreadKey
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer
from tests.storage.conftest import PG_DSN, drop_redis_keys

_MEMORY_FIELDS = {"metadata", "window", "values", "version"}


class Damage:
    """Writes raw values into one backend's stored rows."""

    def __init__(
        self,
        backend: str,
        checkpointer: Checkpointer,
        sqlite_path: Path,
        pg_schema: str,
        redis_prefix: str,
    ) -> None:
        self.backend = backend
        self.checkpointer = checkpointer
        self.sqlite_path = sqlite_path
        self.pg_schema = pg_schema
        self.redis_prefix = redis_prefix

    def can_hold(self, column: str, value: Any) -> bool:
        """Whether this backend can store ``value`` in ``column`` at all."""
        if self.backend == "memory":
            return column in _MEMORY_FIELDS
        if self.backend == "sqlite":
            return True
        typed = {"version": int, "log_length": int}
        if column in typed:
            return isinstance(value, typed[column])
        if column in {"metadata", "window", "values"}:
            return _is_json(value)
        return True

    async def thread(self, key: ThreadKey, column: str, value: Any) -> None:
        """Set a column of the thread's state row."""
        if isinstance(self.checkpointer, InMemoryCheckpointer):
            assert column in _MEMORY_FIELDS, column
            setattr(self.checkpointer._tenants[key.user_id][key.thread_id], column, value)
            return
        await self._sql(
            f'UPDATE {{t}}threads SET "{column}" = ? WHERE user_id = ? AND thread_id = ?',
            (value, key.user_id, key.thread_id),
        )

    async def checkpoints(self, key: ThreadKey, column: str, value: Any) -> None:
        """Set a column of every checkpoint of the thread."""
        if isinstance(self.checkpointer, InMemoryCheckpointer):
            thread = self.checkpointer._tenants[key.user_id][key.thread_id]
            thread.replace([_replace(cp, **{column: value}) for cp in thread.checkpoints()])
            return
        where = "user_id = ? AND thread_id = ?"
        if self.backend == "sqlite":  # keyed by the thread row's id
            where = "tid = (SELECT id FROM threads WHERE user_id = ? AND thread_id = ?)"
        await self._sql(
            f'UPDATE {{t}}checkpoints SET "{column}" = ? WHERE {where}',
            (value, key.user_id, key.thread_id),
        )

    async def rename(self, key: ThreadKey, thread_id: str) -> None:
        """Give the thread's state row an id the checkpointer would no longer accept."""
        if isinstance(self.checkpointer, InMemoryCheckpointer):
            tenant = self.checkpointer._tenants[key.user_id]
            tenant[thread_id] = tenant.pop(key.thread_id)
            return
        await self._sql(
            "UPDATE {t}threads SET thread_id = ? WHERE user_id = ? AND thread_id = ?",
            (thread_id, key.user_id, key.thread_id),
        )

    async def _sql(self, sql: str, params: tuple[Any, ...]) -> None:
        if self.backend == "sqlite":
            with sqlite3.connect(self.sqlite_path) as conn:
                conn.execute(sql.format(t=""), params)
            return
        import psycopg

        query = sql.format(t=f'"{self.pg_schema}".').replace("?", "%s")
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(query, params)
        if "redis" in self.backend:
            await drop_redis_keys(self.redis_prefix)


def _replace(checkpoint: Any, **changes: Any) -> Any:
    return checkpoint._replace(**changes)  # the in-memory store's rows are named tuples


def _is_json(value: Any) -> bool:
    import json

    try:
        json.loads(value)
    except (TypeError, ValueError):
        return False
    return True
