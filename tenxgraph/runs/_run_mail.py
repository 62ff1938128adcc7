"""Letters to the worker holding a run: browser-side tool results posted to another worker.

A letter is a row of ``<schema>.server_run_mail`` addressed to a run, never
to a worker (no row says which worker holds a run: its thread's lease
does). A ``NOTIFY`` on the mail channel names the run; the worker holding
it takes the letter (each once), applies it and answers, waking the sender
on the sender's own channel (see ``server._tool_relay``). A letter is
posted once: its insert is not sent again after a lost reply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tenxgraph.storage.sql import Component

if TYPE_CHECKING:
    from tenxgraph.storage.sql import PgDatabase

__all__ = ["MAIL", "RunMail"]

MAIL = Component(
    "server_run_mail",
    (
        (
            """CREATE TABLE {schema}.server_run_mail (
                id bigserial PRIMARY KEY,
                run_id text NOT NULL,
                holder text NOT NULL,
                sender text NOT NULL,
                state text NOT NULL DEFAULT 'new',
                body jsonb NOT NULL,
                answer jsonb,
                created_at timestamptz NOT NULL DEFAULT now()
            )""",
            """CREATE INDEX server_run_mail_new ON {schema}.server_run_mail (holder)
                WHERE state = 'new'""",
        ),
        (  # letters go to the run; whichever worker holds it takes them
            "DROP INDEX {schema}.server_run_mail_new",
            "ALTER TABLE {schema}.server_run_mail DROP COLUMN holder",
            """CREATE INDEX server_run_mail_new ON {schema}.server_run_mail (run_id)
                WHERE state = 'new'""",
        ),
    ),
)
"""Requests to the worker holding a run, and their answers (``_tool_relay``)."""


class RunMail:
    """The letters of one schema, on the run queue's database."""

    def __init__(self, db: PgDatabase, schema: str) -> None:
        """Use ``db`` (whose components include ``MAIL``) in ``schema``."""
        self._db, self._schema = db, schema
        self._mail = f"{db.s}.server_run_mail"
        self.channel = f"tenxgraph_mail_{schema}"
        """The channel that says a letter came for a run (the payload is its id)."""

    def worker_channel(self, worker_id: str) -> str:
        """The LISTEN/NOTIFY channel of one worker (a name Postgres takes whatever the id)."""
        digest = hashlib.sha1(f"{self._schema}:{worker_id}".encode()).hexdigest()[:24]
        return f"tenxgraph_w_{digest}"

    async def _fetch(
        self, sql: str, params: Sequence[Any], *, resend: bool = True
    ) -> list[tuple[Any, ...]]:
        async def once(lost: bool) -> list[tuple[Any, ...]]:
            async with self._db.connection() as conn:
                cursor = await conn.execute(sql, params)
                return await cursor.fetchall() if cursor.description else []

        return await self._db.retrying(once, resend=resend)

    async def post(self, run_id: str, sender: str, body: Any) -> int:
        """Leave ``body`` for the worker holding ``run_id`` and wake it; the letter's id."""
        await self._fetch(
            f"DELETE FROM {self._mail} WHERE created_at < now() - interval '10 minutes'", []
        )
        rows = await self._fetch(
            f"INSERT INTO {self._mail} (run_id, sender, body) VALUES (%s, %s, %s) RETURNING id",
            [run_id, sender, json.dumps(body)],
            resend=False,
        )
        await self._fetch("SELECT pg_notify(%s, %s)", [self.channel, run_id])
        return int(rows[0][0])

    async def take(self, run_ids: Sequence[str]) -> list[tuple[int, str, str, Any]]:
        """The new letters to runs ``run_ids``, taken (each once): (id, run id, sender, body)."""
        if not run_ids:
            return []
        rows = await self._fetch(
            f"UPDATE {self._mail} SET state = 'taken' WHERE run_id = ANY(%s) AND state = 'new'"
            " RETURNING id, run_id, sender, body",
            [list(run_ids)],
            resend=False,
        )
        return [(int(i), str(r), str(s), b) for i, r, s, b in rows]

    async def answer(self, letter: int, sender: str, answer: Any) -> None:
        """Answer a letter taken, and wake its sender."""
        await self._fetch(
            f"UPDATE {self._mail} SET state = 'done', answer = %s WHERE id = %s",
            [json.dumps(answer), letter],
        )
        await self._fetch("SELECT pg_notify(%s, %s)", [self.worker_channel(sender), str(letter)])

    async def reply(self, letter: int) -> tuple[str, Any] | None:
        """A letter's state (new, taken, done, withdrawn) and answer; None once dropped."""
        rows = await self._fetch(f"SELECT state, answer FROM {self._mail} WHERE id = %s", [letter])
        return (str(rows[0][0]), rows[0][1]) if rows else None

    async def withdraw(self, letter: int) -> bool:
        """Take back a letter no worker took yet; False once it was taken."""
        rows = await self._fetch(
            f"UPDATE {self._mail} SET state = 'withdrawn' WHERE id = %s AND state = 'new'"
            " RETURNING id",
            [letter],
        )
        return bool(rows)

    async def drop(self, letter: int) -> None:
        """Delete a letter once its sender read the answer."""
        await self._fetch(f"DELETE FROM {self._mail} WHERE id = %s", [letter])
