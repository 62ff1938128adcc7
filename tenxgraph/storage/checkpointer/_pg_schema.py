"""The PostgreSQL checkpointer's schema and statements: ordered migrations, the one-statement save.

Kept apart from ``postgres.py`` so the backend's logic reads in one sitting.
Every ``{schema}`` is the quoted schema name.
"""

from __future__ import annotations

from tenxgraph.storage.checkpointer.base import LEGACY_INCARNATION

__all__ = [
    "CLAIM_NEW",
    "CLAIM_NEXT",
    "LEASE_HELD",
    "MIGRATIONS",
    "save_statement",
    "save_statements",
]

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE {schema}.threads (
            user_id text NOT NULL,
            thread_id text NOT NULL,
            version bigint NOT NULL,
            log_length bigint NOT NULL,
            "values" jsonb NOT NULL,
            "window" jsonb NOT NULL,
            metadata jsonb NOT NULL,
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            PRIMARY KEY (user_id, thread_id)
        )""",
        "CREATE INDEX threads_recent ON {schema}.threads (user_id, updated_at DESC, thread_id)",
        "CREATE INDEX threads_metadata ON {schema}.threads USING gin (metadata jsonb_path_ops)",
        """CREATE TABLE {schema}.messages (
            user_id text NOT NULL,
            thread_id text NOT NULL,
            seq bigint NOT NULL,
            message_id text NOT NULL,
            role text NOT NULL,
            usage jsonb,
            body json NOT NULL,
            PRIMARY KEY (user_id, thread_id, seq)
        )""",
        """CREATE TABLE {schema}.checkpoints (
            user_id text NOT NULL,
            thread_id text NOT NULL,
            version bigint NOT NULL,
            node text NOT NULL,
            step bigint NOT NULL,
            log_length bigint NOT NULL,
            "values" jsonb NOT NULL,
            "window" jsonb NOT NULL,
            created_at double precision NOT NULL,
            PRIMARY KEY (user_id, thread_id, version)
        )""",
    ),
    (  # 2: thread identity; threads stored before it share the incarnation 'legacy'
        "ALTER TABLE {schema}.threads ADD COLUMN incarnation text NOT NULL "
        f"DEFAULT '{LEGACY_INCARNATION}'",
    ),
    (  # 3: leases, one run holding a thread at a time; times on the database clock
        """CREATE TABLE {schema}.leases (
            user_id text NOT NULL,
            thread_id text NOT NULL,
            owner text NOT NULL,
            expires_at double precision NOT NULL,
            stop text,
            PRIMARY KEY (user_id, thread_id)
        )""",
    ),
    (  # 4: branches inside a thread; NULL is the checkpoint before (every older row)
        "ALTER TABLE {schema}.checkpoints ADD COLUMN parent_version bigint",
    ),
)
"""Ordered schema changes (``{schema}`` is the quoted schema name). Append only.

Message bodies are ``json`` (kept as written, read back as text for one
pydantic call); the small JSON columns are ``jsonb`` (metadata filters use
``@>`` and a GIN index).
"""

LEASE_HELD = """(%(lease)s::text IS NULL OR EXISTS (
        SELECT FROM {schema}.leases WHERE user_id = %(user)s AND thread_id = %(thread)s
            AND owner = %(lease)s FOR SHARE))"""
"""The save's fence: true without a lease (``%(lease)s`` NULL), else only while the lease
row is that owner's. ``FOR SHARE`` holds the row until the save commits, so a run taking
the lease waits for a save that passed the fence, and a save after the take fails it."""

CLAIM_NEW = """
    INSERT INTO {schema}.threads (user_id, thread_id, incarnation, version, log_length,
        "values", "window", metadata, created_at, updated_at)
    SELECT %(user)s, %(thread)s, %(incarnation)s, 1, %(added)s, %(values)s::jsonb,
        %(window)s::jsonb, coalesce(%(metadata)s::jsonb, '{{}}'), %(now)s, %(now)s
    WHERE {lease_held}
    ON CONFLICT DO NOTHING
    RETURNING 0::bigint AS base"""
"""Claims a new thread: inserts its state row, with its new incarnation, unless the key
exists or the write's lease is lost (``{lease_held}`` is ``LEASE_HELD``)."""

CLAIM_NEXT = """
    UPDATE {schema}.threads SET version = version + 1, log_length = log_length + %(added)s,
        "values" = %(values)s::jsonb, "window" = %(window)s::jsonb,
        metadata = coalesce(%(metadata)s::jsonb, metadata), updated_at = %(now)s
    WHERE user_id = %(user)s AND thread_id = %(thread)s AND incarnation = %(incarnation)s
        AND version = %(expected)s AND log_length + %(added)s >= %(reach)s
        AND {lease_held}
    RETURNING log_length - %(added)s AS base"""
"""Claims the next version: the compare-and-swap on incarnation and version (the window
must fit the grown log, and the write's lease, if any, must still be held)."""

_SAVE = """
WITH claimed AS ({claim}),
appended AS (
    INSERT INTO {schema}.messages (user_id, thread_id, seq, message_id, role, usage, body)
    SELECT %(user)s, %(thread)s, claimed.base + t.ord - 1, t.message_id, t.role,
        t.usage::jsonb, t.body::json
    FROM claimed, unnest(%(message_ids)b::text[], %(roles)b::text[], %(usages)b::text[],
        %(bodies)b::text[]) WITH ORDINALITY AS t(message_id, role, usage, body, ord)
),
recorded AS (
    INSERT INTO {schema}.checkpoints (user_id, thread_id, version, node, step, log_length,
        "values", "window", created_at, parent_version)
    SELECT %(user)s, %(thread)s, %(version)s, %(node)s, %(step)s, claimed.base + %(added)s,
        %(values)s::jsonb, %(window)s::jsonb, %(now)s, %(parent)s::bigint
    FROM claimed
){prune}{release}
SELECT base FROM claimed"""

_PRUNE = """,
pruned AS (
    DELETE FROM {schema}.checkpoints
    WHERE user_id = %(user)s AND thread_id = %(thread)s AND version <= %(prune_upto)s
        AND EXISTS (SELECT FROM claimed)
)"""
"""Retention: drops checkpoints older than the newest ``keep_checkpoints`` (never the new one)."""


_RELEASE = """,
released AS (
    DELETE FROM {schema}.leases
    WHERE user_id = %(user)s AND thread_id = %(thread)s AND owner = %(lease)s
        AND EXISTS (SELECT FROM claimed)
)"""
"""A save that gives its lease up (``release_lease``): the lease row goes in the same
statement, only when the save claimed its version (one round trip, not two)."""


def save_statement(
    schema: str, claim: str, keep_checkpoints: int | None, *, release: bool = False
) -> str:
    """The save as one statement: ``claim`` (``CLAIM_NEW`` or ``CLAIM_NEXT``) and its writes.

    The message arrays go in binary (``%b``): in text form psycopg escapes every
    element in Python (a regular expression over each JSON body's quotes), about
    20 µs a message, against 1 µs a message sent as is.

    ``release``: the statement also drops the write's lease once the save claimed its version.
    """
    prune = "" if keep_checkpoints is None else _PRUNE.format(schema=schema)
    released = _RELEASE.format(schema=schema) if release else ""
    claimed = claim.format(schema=schema, lease_held=LEASE_HELD.format(schema=schema))
    return _SAVE.format(claim=claimed, schema=schema, prune=prune, release=released)


def save_statements(schema: str, keep_checkpoints: int | None) -> dict[tuple[bool, bool], str]:
    """Each save statement by (a new thread?, the write's lease given up with it?)."""
    return {
        (new, release): save_statement(schema, claim, keep_checkpoints, release=release)
        for new, claim in ((True, CLAIM_NEW), (False, CLAIM_NEXT))
        for release in (False, True)
    }
