"""The crons of a server on Postgres: ``<schema>.server_crons``, beside the run table.

A row keeps the cron whole (``cron`` jsonb) and, as columns, what the
queries select by. ``due`` is the scheduler's step on every worker: in one
transaction it takes the enabled rows whose ``next_run_at`` passed ``FOR
UPDATE SKIP LOCKED`` (a row another worker is moving on is skipped, never
waited for), moves each to its next tick and inserts the tick's run as a
pending row of ``server_runs``. A tick is therefore queued once however many
workers look, and a crash in between leaves the row where it was (the next
look queues it). The run rows are then claimed as any queued run.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from tenxgraph.runs._crons import SORTS, Cron, CronQuery, DueRun

if TYPE_CHECKING:
    from tenxgraph.runs._pg_queue import PgRunQueue

__all__ = ["CRONS_TABLE", "PgCronTable"]

CRONS_TABLE = (
    """CREATE TABLE {schema}.server_crons (
        cron_id text PRIMARY KEY,
        user_id text NOT NULL,
        assistant_id text NOT NULL,
        thread_id text,
        enabled boolean NOT NULL,
        next_run_at timestamptz,
        created_at timestamptz NOT NULL,
        cron jsonb NOT NULL
    )""",
    """CREATE INDEX server_crons_due ON {schema}.server_crons (next_run_at)
        WHERE enabled AND next_run_at IS NOT NULL""",
    "CREATE INDEX server_crons_user ON {schema}.server_crons (user_id, created_at)",
)
"""The migration of the run table's component (``RUNS``) that adds the crons' table."""

_DATES = ("end_time", "next_run_at", "created_at", "updated_at")


def _dumps(cron: Cron) -> str:
    data = {name: getattr(cron, name) for name in Cron.__slots__}
    for name in _DATES:
        data[name] = data[name].isoformat() if data[name] is not None else None
    return json.dumps(data)


def _loads(data: Any) -> Cron:
    data = dict(json.loads(data) if isinstance(data, str) else data)
    for name in _DATES:
        data[name] = dt.datetime.fromisoformat(data[name]) if data[name] else None
    return Cron(**data)


class PgCronTable:
    """Crons in the run queue's schema; their ticks become the queue's pending rows."""

    enqueues = True

    def __init__(self, queue: PgRunQueue) -> None:
        self.queue = queue
        self._db = queue.database
        self._t = f"{self._db.s}.server_crons"
        self._runs = f"{self._db.s}.server_runs"

    async def _fetch(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        async def once(lost: bool) -> list[tuple[Any, ...]]:
            async with self._db.connection() as conn:
                cursor = await conn.execute(sql, params)
                return list(await cursor.fetchall()) if cursor.description else []

        return await self._db.retrying(once)

    async def create(self, cron: Cron) -> Cron:
        await self.put(cron)
        return cron

    async def put(self, cron: Cron) -> None:
        await self._fetch(
            f"""INSERT INTO {self._t} (cron_id, user_id, assistant_id, thread_id, enabled,
                    next_run_at, created_at, cron) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
                ON CONFLICT (cron_id) DO UPDATE SET enabled = excluded.enabled,
                    next_run_at = excluded.next_run_at, cron = excluded.cron""",
            [
                cron.cron_id,
                cron.user_id,
                cron.assistant_id,
                cron.thread_id,
                cron.enabled,
                cron.next_run_at,
                cron.created_at,
                _dumps(cron),
            ],
        )

    async def get(self, user_id: str, cron_id: str) -> Cron | None:
        rows = await self._fetch(
            f"SELECT cron FROM {self._t} WHERE cron_id = %s AND user_id = %s", [cron_id, user_id]
        )
        return _loads(rows[0][0]) if rows else None

    async def delete(self, user_id: str, cron_id: str) -> bool:
        rows = await self._fetch(
            f"DELETE FROM {self._t} WHERE cron_id = %s AND user_id = %s RETURNING cron_id",
            [cron_id, user_id],
        )
        return bool(rows)

    def _where(self, query: CronQuery) -> tuple[str, list[Any]]:
        clauses, params = ["user_id = %s"], [query.user_id]
        for column in ("assistant_id", "thread_id", "enabled"):
            value = getattr(query, column)
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        if query.metadata:
            clauses.append("cron->'metadata' @> %s::jsonb")
            params.append(json.dumps(dict(query.metadata)))
        return " AND ".join(clauses), params

    async def search(
        self, query: CronQuery, *, limit: int, offset: int, sort_by: str, descending: bool
    ) -> list[Cron]:
        where, params = self._where(query)
        column = sort_by if sort_by in SORTS else "created_at"
        order = {
            "next_run_date": "next_run_at",
            "end_time": "(cron->>'end_time')",
            "updated_at": "(cron->>'updated_at')",
        }.get(column, column)
        direction = "DESC" if descending else "ASC"
        rows = await self._fetch(
            f"SELECT cron FROM {self._t} WHERE {where}"
            f" ORDER BY {order} {direction} NULLS LAST, cron_id LIMIT %s OFFSET %s",
            [*params, limit, offset],
        )
        return [_loads(row[0]) for row in rows]

    async def count(self, query: CronQuery) -> int:
        where, params = self._where(query)
        rows = await self._fetch(f"SELECT count(*) FROM {self._t} WHERE {where}", params)
        return int(rows[0][0])

    async def due(self, now: dt.datetime, limit: int = 100) -> list[DueRun]:
        async with self._db.connection(transaction=True) as conn:
            cursor = await conn.execute(
                f"""SELECT cron FROM {self._t}
                    WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= %s
                    ORDER BY next_run_at LIMIT %s FOR UPDATE SKIP LOCKED""",
                [now, limit],
            )
            runs = []
            for (data,) in await cursor.fetchall():
                cron = _loads(data)
                moved = cron.scheduled(now)
                run = cron.due_run(now)
                await conn.execute(
                    f"UPDATE {self._t} SET next_run_at = %s, cron = %s WHERE cron_id = %s",
                    [moved.next_run_at, _dumps(moved), cron.cron_id],
                )
                await conn.execute(
                    f"""INSERT INTO {self._runs} (run_id, user_id, thread_id, status, record,
                            request, run_after) VALUES (%s, %s, %s, 'pending', %s, %s, now())""",
                    [
                        run.run_id,
                        run.user_id,
                        run.thread_id,
                        json.dumps(run.record),
                        json.dumps(run.request),
                    ],
                )
                runs.append(run)
        if runs:
            await self.queue._notify()
        return runs
