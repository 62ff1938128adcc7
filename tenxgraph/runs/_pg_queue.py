"""The durable run table of a scaled-out server: one row per run, run by its thread's lease holder.

Every run of a server started with ``--postgres`` is a row of
``<schema>.server_runs``: its status, its request, how many times a worker
started it (``attempts``), the thread's version when it first started
(``base_version``), its output and its times. The row names no worker and
has no heartbeat of its own: **a running run is alive while its thread's
lease is**, held under an owner string ``f"{run_id}/{token}"``. The lease
rows are the checkpointer's (``{schema}.leases``, see
``storage.checkpointer.pg_leases``), in the same database and schema, so one
transaction can both take a thread's lease and mark a run ``running``:

- **claim** (a worker's claim loop): the oldest rows (up to a batch) that
  are first among their thread's pending and running rows, whose
  ``run_after`` passed, and whose thread has no live lease, are taken ``FOR
  UPDATE SKIP LOCKED`` (concurrent claimers never wait for each other nor
  take the same row); in the same transaction their threads' leases are
  taken, each for a new owner of its run, and the rows become ``running``
  with one more attempt. A pending row is a run nobody started; a
  ``running`` row without a live lease is one whose worker died (the lease
  expired) or handed it back (released it): it is claimed again, and the
  claimer resumes it.
- **take** (the worker a run was asked of, "no hop"): the same, for one
  row, as ``take_thread``'s ``take``. Each try on a busy thread pushes the
  row's ``run_after`` ahead (``reserve_seconds``): consumers leave the row
  to the worker waiting for it, and claim it soon after that worker died.
- The claimer hands the run the lease's owner (``RunControl.lease_owner``):
  the runtime continues that lease rather than taking a new one, and the
  worker's one heartbeat (``renew_leases``, ``LeaseBeat``) keeps it alive.

An outcome is written by ``finish`` (with the lease's release), fenced by ``attempts``:
a worker that stalled while another claimed its run again (a later attempt) writes
nothing. Stopping a run: a pending row ends ``interrupted`` in one conditional
``UPDATE``; a running one is asked to stop through its lease (``request_stop(...,
owner_prefix=f"{run_id}/")`` marks the lease only while that run holds it), and one
whose lease is gone ends ``interrupted`` at once. Browser-side tool results posted to a
worker that does not hold the run are letters to the run (``RunMail``, ``self.mail``).

An outage shorter than ``outage_timeout`` delays the queue's calls as
``PgCheckpointer``'s (``PgDatabase.retrying``). A call whose reply was lost is sent
again only when sending it twice does what sending it once does: ``add`` inserts nothing
for a run id already there, ``finish`` that finds its row ended with the same status
counts as done, a ``take`` that finds its own lease on a running row took it. A claim is
not sent again (its row is claimed again once that lease expired), nor a letter (it
would be posted twice). Only PostgreSQL's row locks, ``SKIP LOCKED`` and clock are used:
workers on several machines agree on expiries without synchronized clocks.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ConfigError, StateError
from tenxgraph.runs._leases import lease_owner
from tenxgraph.runs._pg_crons import CRONS_TABLE
from tenxgraph.runs._run_mail import MAIL, RunMail
from tenxgraph.storage.checkpointer import pg_leases
from tenxgraph.storage.checkpointer.base import ThreadStamp
from tenxgraph.storage.checkpointer.postgres import THREADS
from tenxgraph.storage.sql import Component, PgDatabase

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool


__all__ = ["RUNS", "ClaimedRun", "PgRunQueue", "QueueStats", "RunGone"]

logger = logging.getLogger("tenxgraph.server.runs")

ACTIVE = "('pending', 'running')"
Leases = dict[str, str | None]

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
        (  # a running run's owner is its thread's lease: no owner, heartbeat or cancel here
            "ALTER TABLE {schema}.server_runs ADD COLUMN run_after timestamptz",
            "ALTER TABLE {schema}.server_runs DROP COLUMN owner, DROP COLUMN lease_until,"
            " DROP COLUMN cancel",
        ),
        CRONS_TABLE,  # crons: the schedules whose ticks become rows here (``_pg_crons``)
    ),
)
"""The run table and its migrations."""


class RunGone(StateError):
    """The run's row is no longer waiting to start: it was stopped, or another worker took it."""

    def __init__(self, run_id: str, status: str | None) -> None:
        super().__init__(f"run {run_id!r} is {status or 'gone'} in the run table")
        self.run_id, self.status = run_id, status


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
    """What a worker needs to run it again (the request's fields, see ``_durable``)."""
    attempts: int
    """How many times a worker started it, this claim included."""
    base_version: int | None
    """The thread's version when the first attempt began (None: no attempt began)."""
    output: Any
    updated_at: Any = None
    """When the row last changed (a ``datetime``)."""
    lease_owner: str | None = None
    """For a claim: the owner of the thread's lease the claim took for the run."""
    stamp: ThreadStamp | None = None
    """For a claim: the thread's stamp under the lease it took (None: no thread yet)."""

    @property
    def key(self) -> ThreadKey:
        """The run's thread."""
        return ThreadKey(self.thread_id, self.user_id)

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
    """Rows no worker runs (pending, or running without their live lease), including those
    waiting behind an earlier run of their thread: the queue depth."""


_COLUMNS = (
    "run_id, user_id, thread_id, status, record, request, attempts, base_version, output,"
    " updated_at"
)


def _claim_of(row: Sequence[Any], owner: str, before: int | None) -> ClaimedRun:
    stamp = None if row[10] is None else ThreadStamp(str(row[10]), int(row[11]))
    fields: tuple[Any, ...] = (*row[:7], before, row[8], row[9], owner, stamp)
    return ClaimedRun(*fields)


class PgRunQueue:
    """The run rows in one Postgres schema, beside its threads and their leases."""

    def __init__(
        self,
        conninfo: str | AsyncConnectionPool,
        *,
        schema: str = "tenxgraph",
        pool_size: int = 4,
        connect_timeout: float = 5.0,
        outage_timeout: float = 30.0,
        reserve_seconds: float = 3.0,
    ) -> None:
        """Connect with a DSN or a pool to the database (and ``schema``) of the graph's threads.

        ``outage_timeout`` (seconds; 0 turns it off) is how long the queue's
        calls wait for a Postgres that went away, as ``PgCheckpointer``'s do.
        ``reserve_seconds``: how long after its last try a row a worker
        waits to start stays that worker's (see ``take``).
        """
        if not reserve_seconds > 0:
            raise ConfigError(f"reserve_seconds must be > 0, got {reserve_seconds}")
        self.reserve_seconds = reserve_seconds
        self._db = PgDatabase(
            conninfo,
            components=[THREADS, RUNS, MAIL],
            schema=schema,
            pool_min_size=1,
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            outage_timeout=outage_timeout,
            private_loop=False,
        )
        self._s = self._db.s
        self._t = f"{self._s}.server_runs"
        self.mail = RunMail(self._db, schema)
        """Letters to the worker holding a run (``_tool_relay``)."""
        self._schema = schema
        self._conninfo = conninfo
        self.channel = f"tenxgraph_runs_{schema}"
        """The LISTEN/NOTIFY channel that says a run became claimable."""

    async def _once(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with self._db.connection() as conn:
            return await _rows(conn, sql, params)

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
        run_after: float = 0.0,
    ) -> None:
        """A new pending run, claimable ``run_after`` s from now (a second add: no-op; notified)."""
        row = (run_id, user_id, thread_id, json.dumps(record), json.dumps(request), run_after)
        await self._fetch(
            f"WITH added AS (INSERT INTO {self._t} (run_id, user_id, thread_id, status, record,"
            " request, run_after) VALUES (%s, %s, %s, 'pending', %s, %s,"
            " now() + make_interval(secs => %s)) ON CONFLICT (run_id) DO NOTHING RETURNING 1)"
            " SELECT pg_notify(%s, '') FROM added WHERE %s",
            [*row, self.channel, run_after <= 0],
        )

    @property
    def database(self) -> PgDatabase:
        """The connections of the queue's schema (the crons' table shares them)."""
        return self._db

    async def _notify(self) -> None:
        """Wake the workers listening (a run may have become claimable)."""
        await self._fetch("SELECT pg_notify(%s, '')", [self.channel])

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

    # --- starting runs ----------------------------------------------------------------

    async def claim(self, seconds: float) -> ClaimedRun | None:
        """The oldest run no live lease holds (first of its thread), taken; or None."""
        return next(iter(await self.claim_many(seconds, 1)), None)

    async def claim_many(self, seconds: float, limit: int) -> list[ClaimedRun]:
        """Take up to ``limit`` of the oldest runs no live lease holds (each first of its thread).

        One transaction: rows picked ``FOR UPDATE SKIP LOCKED``, their threads' leases taken
        in one statement for a new owner per run (``ClaimedRun.lease_owner``), the rows marked
        ``running`` in another. A row whose thread another claimer or a run outside the queue
        took meanwhile is left to it, and picked for again. ``base_version`` is each row's
        value before this claim. Oldest first.
        """
        return await self._db.retrying(lambda lost: self._claim(seconds, limit), resend=False)

    async def _claim(self, seconds: float, limit: int) -> list[ClaimedRun]:
        mine: list[tuple[str, str, int | None]] = []  # (run_id, lease owner, base_version)
        async with self._db.connection(transaction=True) as conn:
            while len(mine) < limit:  # again while a concurrent claimer won some of the rows
                found = await _rows(
                    conn,
                    f"""SELECT r.run_id, r.user_id, r.thread_id, r.base_version FROM {self._t} r
                        WHERE r.status IN {ACTIVE}
                          AND (r.status = 'running' OR r.run_after IS NULL OR r.run_after <= now())
                          AND NOT EXISTS (
                            SELECT 1 FROM {self._t} o
                            WHERE o.user_id = r.user_id AND o.thread_id = r.thread_id
                              AND o.seq < r.seq AND o.status IN {ACTIVE})
                          AND {pg_leases.free(self._s, "r.user_id", "r.thread_id")}
                        ORDER BY r.seq LIMIT %s
                        FOR UPDATE OF r SKIP LOCKED""",
                    [limit - len(mine)],
                )
                picked = {  # one per thread, as the WHERE says
                    ThreadKey(thread, user): (run, lease_owner(run), before)
                    for run, user, thread, before in found
                }
                wanted = [(key, owner) for key, (_, owner, _) in picked.items()]
                taken = await pg_leases.take_many(conn, self._s, wanted, seconds)
                mine += [run for key, run in picked.items() if key in taken]
                if len(taken) == len(wanted):
                    break
            if not mine:
                return []
            rows = await self._mark_running(conn, [run_id for run_id, _, _ in mine])
            by_id = {row[0]: row for row in rows}
            return [_claim_of(by_id[run_id], owner, before) for run_id, owner, before in mine]

    async def _mark_running(
        self, conn: AsyncConnection[Any], run_ids: list[str]
    ) -> list[tuple[Any, ...]]:
        """Mark the rows ``running``, one more attempt each; the thread's stamp follows the row.

        A first attempt's ``base_version`` is its thread's version now (0: no thread yet),
        found by one outer join (``UPDATE ... FROM`` alone drops a run without a thread).
        """
        return await _rows(
            conn,
            f"WITH m AS (SELECT r.seq, t.incarnation, t.version FROM {self._t} r LEFT JOIN"
            f" {self._s}.threads t USING (user_id, thread_id) WHERE r.run_id = ANY(%s))"
            f" UPDATE {self._t} r SET status = 'running', attempts = attempts + 1,"
            " started_at = coalesce(started_at, now()), updated_at = now(),"
            " base_version = coalesce(r.base_version, m.version, 0)"
            f" FROM m WHERE r.seq = m.seq RETURNING {_COLUMNS}, m.incarnation, m.version",
            [run_ids],
        )

    async def take(
        self, run_id: str, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None, int]:
        """Start pending run ``run_id`` here: take its thread's lease, mark the row running.

        One transaction. Returns ``(None, stamp, attempts)`` once started (``stamp``: the
        thread's, as ``atake_thread`` gives it), or ``(holder, None, 0)`` while an earlier
        run of the thread or another lease holder is in the way (the row is kept for this
        worker ``reserve_seconds`` longer). ``RunGone`` when the row is no longer pending
        (it was stopped, or another worker claimed it).
        """

        async def attempt(lost: bool) -> tuple[str | None, ThreadStamp | None, int]:
            async with self._db.connection(transaction=True) as conn:
                return await self._take(conn, run_id, key, owner, seconds, lost)

        return await self._db.retrying(attempt)

    async def _take(
        self,
        conn: AsyncConnection[Any],
        run_id: str,
        key: ThreadKey,
        owner: str,
        seconds: float,
        lost: bool,
    ) -> tuple[str | None, ThreadStamp | None, int]:
        found = await _rows(
            conn,
            f"""SELECT r.status, r.attempts, (SELECT o.run_id FROM {self._t} o
                    WHERE o.user_id = r.user_id AND o.thread_id = r.thread_id
                      AND o.seq < r.seq AND o.status IN {ACTIVE} ORDER BY o.seq LIMIT 1)
                FROM {self._t} r WHERE r.run_id = %s FOR UPDATE""",
            [run_id],
        )
        status = found[0][0] if found else None
        if (  # our own try may have landed before its reply was lost
            status == "running"
            and lost
            and await pg_leases.take(conn, self._s, key, owner, seconds) is None
        ):
            return None, await pg_leases.stamp(conn, self._s, key), int(found[0][1])
        if status != "pending":
            raise RunGone(run_id, status)
        holder = found[0][2]
        if holder is None:
            holder = await pg_leases.take(conn, self._s, key, owner, seconds)
        if holder is not None:
            await conn.execute(
                f"UPDATE {self._t} SET run_after = greatest(coalesce(run_after, now()),"
                " now() + make_interval(secs => %s)) WHERE run_id = %s",
                [self.reserve_seconds, run_id],
            )
            return str(holder), None, 0
        stamp = await pg_leases.stamp(conn, self._s, key)
        (row,) = await self._mark_running(conn, [run_id])
        return None, stamp, int(row[6])

    async def displace(self, user_id: str, thread_id: str, run_id: str) -> list[str]:
        """End ``interrupted`` the thread's pending runs queued before ``run_id``.

        For a newer run with ``interrupt`` or ``rollback``; the running one is
        stopped through its lease (``take_thread``'s stop request).
        """
        rows = await self._fetch(
            f"""UPDATE {self._t} SET status = 'interrupted', updated_at = now()
                WHERE user_id = %s AND thread_id = %s AND status = 'pending'
                  AND seq < (SELECT seq FROM {self._t} WHERE run_id = %s)
                RETURNING run_id""",
            [user_id, thread_id, run_id],
        )
        return [str(r) for (r,) in rows]

    async def renew_leases(self, held: list[tuple[ThreadKey, str]], seconds: float) -> Leases:
        """Renew runs' thread leases in one statement: owner -> stop request (left out: lost)."""

        async def once(lost: bool) -> Leases:
            async with self._db.connection() as conn:
                return await pg_leases.renew_many(conn, self._s, held, seconds)

        return await self._db.retrying(once)

    # --- ending runs ------------------------------------------------------------------

    async def finish(
        self, run_id: str, attempt: int, status: str, output: Any, owner: str | None = None
    ) -> bool:
        """Record how attempt ``attempt`` of the run ended; False when it was not the last one.

        Sent again after a lost reply, it finds its own write (a row ended with ``status``
        counts as done). The same statement notifies the workers (the thread's next run may
        go) and gives the thread's lease up if ``owner`` holds it.
        """

        async def once(lost: bool) -> bool:
            rows = await self._once(
                f"WITH ended AS (UPDATE {self._t} SET status = %s, output = %s,"
                f" updated_at = now() WHERE run_id = %s AND attempts = %s AND status IN {ACTIVE}"
                f" RETURNING run_id), released AS (DELETE FROM {self._s}.leases l USING {self._t}"
                " r WHERE r.run_id = %s AND (l.user_id, l.thread_id, l.owner) = (r.user_id,"
                " r.thread_id, %s)) SELECT pg_notify(%s, '') FROM ended",
                [status, json.dumps(output), run_id, attempt, run_id, owner, self.channel],
            )
            if rows or not lost:
                return bool(rows)
            ended = await self._once(f"SELECT status FROM {self._t} WHERE run_id = %s", [run_id])
            return bool(ended) and ended[0][0] == status

        return await self._db.retrying(once)

    async def record_end(
        self, run_id: str, attempt: int, status: str, output: Any, owner: str | None = None
    ) -> bool:
        """``finish``; past ``outage_timeout``, False and logged (a later claimer ends the run)."""
        try:
            await self.finish(run_id, attempt, status, output, owner)
        except Exception as exc:
            logger.warning("run %s: outcome not recorded: %s", run_id, exc)
            return False
        return True

    async def handed_back(self) -> None:
        """A worker released a run's lease without ending it: another worker claims it now."""
        try:
            await self._notify()
        except Exception as exc:  # the consumers' next poll finds it
            logger.info("run queue: no notification of a run handed back: %s", exc)

    async def request_stop(self, run_id: str, action: str) -> ClaimedRun | None:
        """Stop the run: a pending one ends ``interrupted`` now, a running one through its lease.

        A running run whose lease is gone (its worker died or handed it
        back) ends ``interrupted`` here too. Returns the row after the
        request (None: unknown or ended already).
        """

        async def attempt(lost: bool) -> ClaimedRun | None:
            async with self._db.connection(transaction=True) as conn:
                found = await _rows(
                    conn,
                    f"SELECT {_COLUMNS} FROM {self._t} WHERE run_id = %s"
                    f" AND status IN {ACTIVE} FOR UPDATE",
                    [run_id],
                )
                if not found:
                    return None
                row = ClaimedRun(*found[0])
                if row.status == "running":
                    prefix = f"{run_id}/"
                    if await pg_leases.request_stop(conn, self._s, row.key, action, prefix):
                        return row
                ended = await _rows(
                    conn,
                    f"UPDATE {self._t} SET status = 'interrupted', updated_at = now()"
                    f" WHERE run_id = %s RETURNING {_COLUMNS}",
                    [run_id],
                )
                return ClaimedRun(*ended[0])

        row = await self._db.retrying(attempt)
        if row is not None and row.status == "interrupted":
            await self._notify()
        return row

    # --- reading ----------------------------------------------------------------------

    async def active(self, user_id: str, thread_id: str) -> list[str]:
        """The runs of the thread that are pending or running (any worker's)."""
        rows = await self._fetch(
            f"SELECT run_id FROM {self._t} WHERE user_id = %s AND thread_id = %s"
            f" AND status IN {ACTIVE}",
            [user_id, thread_id],
        )
        return [str(run_id) for (run_id,) in rows]

    async def alive(self, run_id: str) -> bool:
        """True while the run is running and holds its thread's live lease (some worker runs it)."""
        rows = await self._fetch(
            f"SELECT 1 FROM {self._t} r WHERE r.run_id = %s AND r.status = 'running'"
            f" AND {self._alive('r')}",
            [run_id],
        )
        return bool(rows)

    def _alive(self, r: str) -> str:
        """SQL true when run row ``r`` holds its thread's live lease (a worker runs it)."""
        return (
            f"EXISTS (SELECT FROM {self._s}.leases l WHERE l.user_id = {r}.user_id"
            f" AND l.thread_id = {r}.thread_id AND l.expires_at >= {pg_leases.NOW}"
            f" AND starts_with(l.owner, {r}.run_id || '/'))"
        )

    async def get(self, user_id: str, run_id: str) -> ClaimedRun | None:
        """The run ``run_id`` of ``user_id``, or None."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM {self._t} WHERE run_id = %s AND user_id = %s",
            [run_id, user_id],
        )
        return ClaimedRun(*rows[0]) if rows else None

    async def list_runs(
        self, user_id: str, thread_id: str, *, limit: int, offset: int, status: str | None
    ) -> list[ClaimedRun]:
        """The thread's runs, newest first."""
        rows = await self._fetch(
            f"SELECT {_COLUMNS} FROM {self._t} WHERE user_id = %s AND thread_id = %s"
            " AND (%s::text IS NULL OR status = %s) ORDER BY seq DESC LIMIT %s OFFSET %s",
            [user_id, thread_id, status, status, limit, offset],
        )
        return [ClaimedRun(*row) for row in rows]

    async def forget(self, run_id: str) -> None:
        """Drop an ended run's row."""
        await self._fetch(
            f"DELETE FROM {self._t} WHERE run_id = %s AND status NOT IN {ACTIVE}", [run_id]
        )

    async def stats(self) -> QueueStats:
        """Rows per status, and how many wait for a worker."""
        rows = await self._fetch(
            f"""SELECT status, count(*), count(*) FILTER (
                    WHERE status = 'pending' OR (status = 'running' AND NOT {self._alive("r")}))
                FROM {self._t} r GROUP BY status""",
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


async def _rows(
    conn: AsyncConnection[Any], sql: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(sql, params)
    return await cursor.fetchall() if cursor.description else []
