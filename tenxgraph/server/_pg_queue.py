"""The durable run table of a scaled-out server: one row per run, leased by the worker running it.

Every run of a server started with ``--postgres`` is a row of
``<schema>.server_runs``. The worker that runs it holds a **lease** on the
row (``owner``, ``lease_until``) and extends it by heartbeat; a worker that
dies (kill -9, a lost machine) stops extending it, and once it expired any
worker **claims** the row (``FOR UPDATE SKIP LOCKED``: concurrent claimers
never wait for each other nor take the same row) and runs it again as a new
attempt. Each write of the holder is fenced by ``owner``, so a worker that
stalled past its lease cannot overwrite the outcome its successor records.

Per thread the rows keep their order: a row is claimable only when no
earlier row of the same thread is still pending or running, so runs queued
behind a busy thread start in the order they came, whichever worker holds
them.

Cancellation across workers is a column: ``request_cancel`` writes the
action into the row and the holder reads it back with its next heartbeat
(within ``heartbeat_seconds``). A row nobody holds (pending, or its holder
died) is ended at once.

Browser-side tool results posted to a worker that does not hold the run
are a row of ``<schema>.server_run_mail`` addressed to the holder, which a
``NOTIFY`` on the holder's own channel wakes (see ``_tool_relay``).

Only what PostgreSQL provides is used: row locks, ``SKIP LOCKED`` and the
database's clock (``now()``), so workers on several machines agree on
expiries without synchronized clocks.

An outage shorter than ``outage_timeout`` delays the queue's calls as it
delays ``PgCheckpointer``'s: each runs through ``PgDatabase.retrying``. A
call whose reply was lost may be sent again only when sending it twice does
what sending it once does: ``add`` inserts nothing for a run id already
there, ``finish`` that finds its row already ended with the same status
counts as done, and the lease and status updates set values rather than
add to them. A claim is not sent again (it counts an attempt; the row it
may have taken is claimed again once its lease expired), nor a letter (it
would be posted twice).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenxgraph.errors import ConfigError
from tenxgraph.storage.sql import Component, PgDatabase

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["MAIL", "RUNS", "ClaimedRun", "PgRunQueue", "QueueStats"]

logger = logging.getLogger("tenxgraph.server.runs")

RUNS = Component(
    "server_runs",
    (
        (
            """CREATE TABLE {schema}.server_runs (
                seq bigserial PRIMARY KEY,
                run_id text NOT NULL UNIQUE,
                user_id text NOT NULL,
                thread_id text NOT NULL,
                status text NOT NULL,
                record jsonb NOT NULL,
                request jsonb NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                owner text,
                lease_until timestamptz,
                cancel text,
                base_version bigint,
                output jsonb,
                created_at timestamptz NOT NULL DEFAULT now(),
                started_at timestamptz,
                updated_at timestamptz NOT NULL DEFAULT now()
            )""",
            """CREATE INDEX server_runs_active ON {schema}.server_runs (seq)
                WHERE status IN ('pending', 'running')""",
            """CREATE INDEX server_runs_thread ON {schema}.server_runs
                (user_id, thread_id, seq)""",
        ),
    ),
)
"""The run table and its migrations."""

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
    ),
)
"""Requests to the worker holding a run, and their answers (``_tool_relay``)."""


@dataclass(frozen=True, slots=True)
class ClaimedRun:
    """A row as a worker sees it: what to run, and how far earlier attempts got."""

    run_id: str
    user_id: str
    thread_id: str
    status: str
    record: dict[str, Any]
    """The run as the API shows it (``RunRecord.as_json`` when it was created)."""
    request: dict[str, Any]
    """What a worker needs to run it again (the request's fields, see ``_durable_runs``)."""
    attempts: int
    """How many times a worker started it, this claim included."""
    base_version: int | None
    """The thread's version when the first attempt began (None: no attempt began)."""
    cancel: str | None
    output: Any
    updated_at: Any = None
    """When the row last changed (a ``datetime``)."""

    def as_json(self) -> dict[str, Any]:
        """The run as the API shows it, with its status now."""
        updated = self.updated_at.isoformat() if self.updated_at is not None else None
        return {**self.record, "status": self.status, "updated_at": updated or ""}


@dataclass(frozen=True, slots=True)
class QueueStats:
    """What ``/metrics`` shows of the table."""

    by_status: dict[str, int]
    """Rows per status."""
    claimable: int
    """Rows no live worker holds (pending and unheld, or their lease expired), including
    those waiting behind an earlier run of their thread: the queue depth."""


_COLUMNS = (
    "run_id, user_id, thread_id, status, record, request, attempts, base_version, cancel, output,"
    " updated_at"
)


def _claimed(row: Sequence[Any]) -> ClaimedRun:
    return ClaimedRun(*row)


class PgRunQueue:
    """The run rows in one Postgres schema: add, claim, heartbeat, finish, hand back, cancel."""

    def __init__(
        self,
        conninfo: str | AsyncConnectionPool,
        *,
        schema: str = "tenxgraph",
        lease_seconds: float = 15.0,
        pool_size: int = 4,
        connect_timeout: float = 5.0,
        outage_timeout: float = 30.0,
    ) -> None:
        """Connect with a DSN or a pool; a silent holder keeps a run ``lease_seconds``.

        ``outage_timeout`` (seconds; 0 turns it off) is how long the queue's
        calls wait for a Postgres that went away, as ``PgCheckpointer``'s do.
        """
        if not lease_seconds > 0:
            raise ConfigError(f"lease_seconds must be > 0, got {lease_seconds}")
        self.lease_seconds = lease_seconds
        self._db = PgDatabase(
            conninfo,
            components=[RUNS, MAIL],
            schema=schema,
            pool_min_size=1,
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            outage_timeout=outage_timeout,
            private_loop=False,
        )
        self._t = f"{self._db.s}.server_runs"
        self._mail = f"{self._db.s}.server_run_mail"
        self._schema = schema
        self._conninfo = conninfo
        self.channel = f"tenxgraph_runs_{schema}"
        """The LISTEN/NOTIFY channel that says a run became claimable."""

    @property
    def heartbeat_seconds(self) -> float:
        """How often a holder extends its leases (a third of the lease, at most a second)."""
        return min(1.0, self.lease_seconds / 3)

    async def _once(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with self._db.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall() if cursor.description else []

    async def _fetch(
        self, sql: str, params: Sequence[Any], *, resend: bool = True
    ) -> list[tuple[Any, ...]]:
        """Run one statement, again through an outage (``resend``: also after a lost reply)."""
        return await self._db.retrying(lambda lost: self._once(sql, params), resend=resend)

    async def add(
        self,
        *,
        run_id: str,
        user_id: str,
        thread_id: str,
        record: dict[str, Any],
        request: dict[str, Any],
        owner: str | None,
    ) -> None:
        """A new run; ``owner`` holds it from the start (None: any worker may claim it)."""
        lease = "now() + make_interval(secs => %s)" if owner else "NULL::timestamptz"
        params: list[Any] = [run_id, user_id, thread_id, json.dumps(record), json.dumps(request)]
        params += [owner] + ([self.lease_seconds] if owner else [])
        await self._fetch(
            f"INSERT INTO {self._t} (run_id, user_id, thread_id, status, record, request,"
            f" owner, lease_until) VALUES (%s, %s, %s, 'pending', %s, %s, %s, {lease})"
            " ON CONFLICT (run_id) DO NOTHING",
            params,
        )
        if owner is None:
            await self._notify()

    async def _notify(self) -> None:
        """Wake the workers listening (a run may have become claimable)."""
        await self._fetch("SELECT pg_notify(%s, '')", [self.channel])

    def worker_channel(self, worker_id: str) -> str:
        """The LISTEN/NOTIFY channel of one worker (a name Postgres takes whatever the id)."""
        digest = hashlib.sha1(f"{self._schema}:{worker_id}".encode()).hexdigest()[:24]
        return f"tenxgraph_w_{digest}"

    async def listen(self, channels: Mapping[str, Callable[[str], None]]) -> None:
        """Call ``channels[name](payload)`` at each notification, until cancelled.

        Reconnects after errors. Workers still poll; this only makes a
        queued run (or a request to this worker) go on without waiting for
        the next poll. A caller's pool gives no DSN: no listening.
        """
        import psycopg

        if not isinstance(self._conninfo, str):
            return
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
                async with conn:
                    for channel in channels:
                        await conn.execute(f'LISTEN "{channel}"')
                    async for note in conn.notifies():
                        channels[note.channel](note.payload)
            except psycopg.Error as exc:  # polling goes on meanwhile
                logger.info("run queue: listening failed (%s); retrying in 1 s", exc)
                await asyncio.sleep(1.0)

    async def claim(self, owner: str) -> ClaimedRun | None:
        """Take the oldest run no live worker holds (first of its thread), or None."""
        rows = await self._fetch(
            f"""UPDATE {self._t} SET owner = %s,
                    lease_until = now() + make_interval(secs => %s),
                    attempts = attempts + 1, updated_at = now()
                WHERE seq = (
                    SELECT r.seq FROM {self._t} r
                    WHERE r.status IN ('pending', 'running')
                      AND (r.owner IS NULL OR r.lease_until < now())
                      AND NOT EXISTS (
                        SELECT 1 FROM {self._t} o
                        WHERE o.user_id = r.user_id AND o.thread_id = r.thread_id
                          AND o.seq < r.seq AND o.status IN ('pending', 'running'))
                    ORDER BY r.seq
                    LIMIT 1
                    FOR UPDATE SKIP LOCKED)
                RETURNING {_COLUMNS}""",
            [owner, self.lease_seconds],
            resend=False,
        )
        return _claimed(rows[0]) if rows else None

    async def started(self, run_id: str, owner: str, base_version: int) -> None:
        """The run's turn came: it is running; remember the thread's version (first time only)."""
        await self._fetch(
            f"UPDATE {self._t} SET status = 'running', started_at = coalesce(started_at, now()),"
            " base_version = coalesce(base_version, %s), updated_at = now()"
            " WHERE run_id = %s AND owner = %s",
            [base_version, run_id, owner],
        )

    async def heartbeat(self, owner: str, run_ids: Sequence[str]) -> dict[str, str | None]:
        """Extend the leases of ``run_ids``; the runs still held, with any cancel requested.

        A run missing from the answer is no longer this worker's (it ended,
        or its lease expired and another worker claimed it).
        """
        if not run_ids:
            return {}
        rows = await self._fetch(
            f"UPDATE {self._t} SET lease_until = now() + make_interval(secs => %s)"
            " WHERE owner = %s AND run_id = ANY(%s) AND status IN ('pending', 'running')"
            " RETURNING run_id, cancel",
            [self.lease_seconds, owner, list(run_ids)],
        )
        return {str(run_id): cancel for run_id, cancel in rows}

    async def finish(self, run_id: str, owner: str, status: str, output: Any) -> bool:
        """Record how the run ended; False when ``owner`` no longer held it (nothing written).

        Sent again after a lost reply, it finds its own write: a row already
        ended with ``status`` counts as done.
        """

        async def attempt(lost: bool) -> bool:
            rows = await self._once(
                f"UPDATE {self._t} SET status = %s, output = %s, owner = NULL,"
                " lease_until = NULL, updated_at = now() WHERE run_id = %s AND owner = %s"
                " AND status IN ('pending', 'running') RETURNING run_id",
                [status, json.dumps(output), run_id, owner],
            )
            if rows or not lost:
                return bool(rows)
            ended = await self._once(f"SELECT status FROM {self._t} WHERE run_id = %s", [run_id])
            return bool(ended) and ended[0][0] == status

        done = await self._db.retrying(attempt)
        if done:
            await self._notify()  # the thread's next run may go now
        return done

    async def release(self, owner: str, run_ids: Sequence[str]) -> int:
        """Hand runs back (graceful shutdown): another worker claims them at once."""
        if not run_ids:
            return 0
        rows = await self._fetch(
            f"UPDATE {self._t} SET owner = NULL, lease_until = NULL, updated_at = now()"
            " WHERE owner = %s AND run_id = ANY(%s) AND status IN ('pending', 'running')"
            " RETURNING run_id",
            [owner, list(run_ids)],
        )
        if rows:
            await self._notify()
        return len(rows)

    async def record_end(self, owner: str, run_id: str, status: str | None, output: Any) -> None:
        """``finish`` the run (``status``) or ``release`` it (None), waiting out an outage.

        Past ``outage_timeout`` the outcome is logged as not recorded: the
        lease expires and the next claimer records it (``finish`` is fenced).
        """
        try:
            if status is None:
                await self.release(owner, [run_id])
            else:
                await self.finish(run_id, owner, status, output)
        except Exception as exc:
            logger.warning("run %s: outcome not recorded: %s", run_id, exc)

    async def request_cancel(self, run_id: str, action: str) -> ClaimedRun | None:
        """Ask the run to stop; a run nobody holds live ends ``interrupted`` here and now.

        Returns the row as it is after the request (None: unknown or ended).
        """
        rows = await self._fetch(
            f"""UPDATE {self._t} SET cancel = %s, updated_at = now(),
                    status = CASE WHEN owner IS NULL OR lease_until < now()
                        THEN 'interrupted' ELSE status END
                WHERE run_id = %s AND status IN ('pending', 'running')
                RETURNING {_COLUMNS}""",
            [action, run_id],
        )
        return _claimed(rows[0]) if rows else None

    async def active(self, user_id: str, thread_id: str) -> list[str]:
        """The runs of the thread that are pending or running (any worker's)."""
        rows = await self._fetch(
            f"SELECT run_id FROM {self._t} WHERE user_id = %s AND thread_id = %s"
            " AND status IN ('pending', 'running')",
            [user_id, thread_id],
        )
        return [str(run_id) for (run_id,) in rows]

    async def holder(self, run_id: str) -> str | None:
        """The live worker holding the run (None: it ended, is queued, or its holder died)."""
        rows = await self._fetch(
            f"SELECT owner FROM {self._t} WHERE run_id = %s AND owner IS NOT NULL"
            " AND lease_until > now() AND status IN ('pending', 'running')",
            [run_id],
        )
        return str(rows[0][0]) if rows else None

    # --- mail to the worker holding a run (``_tool_relay``) ------------------------------

    async def post(self, run_id: str, holder: str, sender: str, body: Any) -> int:
        """Leave ``body`` for ``holder`` and wake it; the letter's id (answers come to it)."""
        await self._fetch(
            f"DELETE FROM {self._mail} WHERE created_at < now() - interval '10 minutes'", []
        )
        rows = await self._fetch(
            f"INSERT INTO {self._mail} (run_id, holder, sender, body) VALUES (%s, %s, %s, %s)"
            " RETURNING id",
            [run_id, holder, sender, json.dumps(body)],
            resend=False,
        )
        await self._fetch("SELECT pg_notify(%s, 'mail')", [self.worker_channel(holder)])
        return int(rows[0][0])

    async def take(self, holder: str) -> list[tuple[int, str, str, Any]]:
        """The new letters to ``holder``, taken (each once): (id, run id, sender, body)."""
        rows = await self._fetch(
            f"UPDATE {self._mail} SET state = 'taken' WHERE holder = %s AND state = 'new'"
            " RETURNING id, run_id, sender, body",
            [holder],
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
        """Take back a letter its holder did not take yet; False once it was taken."""
        rows = await self._fetch(
            f"UPDATE {self._mail} SET state = 'withdrawn' WHERE id = %s AND state = 'new'"
            " RETURNING id",
            [letter],
        )
        return bool(rows)

    async def drop(self, letter: int) -> None:
        """Delete a letter once its sender read the answer."""
        await self._fetch(f"DELETE FROM {self._mail} WHERE id = %s", [letter])

    async def get(self, user_id: str, run_id: str) -> ClaimedRun | None:
        """The run ``run_id`` of ``user_id``, or None."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM {self._t} WHERE run_id = %s AND user_id = %s",
            [run_id, user_id],
        )
        return _claimed(rows[0]) if rows else None

    async def list_runs(
        self, user_id: str, thread_id: str, *, limit: int, offset: int, status: str | None
    ) -> list[ClaimedRun]:
        """The thread's runs, newest first."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM {self._t} WHERE user_id = %s AND thread_id = %s"
            " AND (%s::text IS NULL OR status = %s) ORDER BY seq DESC LIMIT %s OFFSET %s",
            [user_id, thread_id, status, status, limit, offset],
        )
        return [_claimed(row) for row in rows]

    async def forget(self, run_id: str) -> None:
        """Drop an ended run's row."""
        await self._fetch(
            f"DELETE FROM {self._t} WHERE run_id = %s AND status NOT IN ('pending', 'running')",
            [run_id],
        )

    async def stats(self) -> QueueStats:
        """Rows per status, and how many wait for a worker."""
        rows = await self._fetch(
            f"""SELECT status, count(*), count(*) FILTER (
                    WHERE status IN ('pending', 'running')
                      AND (owner IS NULL OR lease_until < now()))
                FROM {self._t} GROUP BY status""",
            [],
        )
        by_status = {str(status): int(count) for status, count, _ in rows}
        return QueueStats(by_status, sum(int(waiting) for _, _, waiting in rows))

    async def ping(self) -> None:
        """One query (readiness)."""
        await self._fetch("SELECT 1", [])

    async def aclose(self) -> None:
        """Close the connections."""
        await self._db.aclose()
