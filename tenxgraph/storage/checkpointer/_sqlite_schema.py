"""The SQLite checkpointer's tables and their ordered migrations (the ``threads`` component).

Since migration 4 a thread row has an integer ``id`` (its rowid), and its
log and checkpoints are keyed by it (``tid``) in ``WITHOUT ROWID`` tables:
each row sits once in its primary-key b-tree, without the user and thread
ids it repeated before and without a second index holding them again (the
leases table too, so taking and giving up a lease writes one page, not two). A
message row is its seq and its JSON body alone: the id, role and usage it
also held are in the body, and nothing read them. That took W6 from 634
to 498 bytes stored per message.

Migration 4 rebuilds the three tables in the opening transaction, so a
file written before it takes time proportional to its size on first open
(in a worker thread, once); nothing is lost: every thread, message and
checkpoint is copied.

Migration 6 adds a message row's ``mid`` and ``ts`` columns (``_sqlite_rows``
says what they hold); rows written before it leave them NULL and read as
they did, so it changes no stored row.
"""

from __future__ import annotations

from tenxgraph.storage.checkpointer import _sqlite_leases as leases
from tenxgraph.storage.checkpointer.base import LEGACY_INCARNATION
from tenxgraph.storage.sql import Component

__all__ = ["MIGRATIONS", "THREADS"]

_THREAD_COLUMNS = (
    'user_id, thread_id, incarnation, version, log_length, "values", "window", metadata, '
    "created_at, updated_at"
)
_CHECKPOINT_COLUMNS = 'version, node, step, log_length, "values", "window", created_at'

_INTEGER_KEYS = (
    """CREATE TABLE threads_4 (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        incarnation TEXT NOT NULL,
        version INTEGER NOT NULL,
        log_length INTEGER NOT NULL,
        "values" TEXT NOT NULL,
        "window" TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        UNIQUE (user_id, thread_id)
    )""",
    f"INSERT INTO threads_4 ({_THREAD_COLUMNS}) "
    f"SELECT {_THREAD_COLUMNS} FROM threads ORDER BY user_id, thread_id",
    """CREATE TABLE messages_4 (
        tid INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (tid, seq)
    ) WITHOUT ROWID""",
    "INSERT INTO messages_4 (tid, seq, body) SELECT t.id, m.seq, m.body "
    "FROM messages AS m JOIN threads_4 AS t ON t.user_id = m.user_id AND t.thread_id = m.thread_id "
    "ORDER BY t.id, m.seq",
    """CREATE TABLE checkpoints_4 (
        tid INTEGER NOT NULL,
        version INTEGER NOT NULL,
        node TEXT NOT NULL,
        step INTEGER NOT NULL,
        log_length INTEGER NOT NULL,
        "values" TEXT NOT NULL,
        "window" TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (tid, version)
    ) WITHOUT ROWID""",
    f"INSERT INTO checkpoints_4 (tid, {_CHECKPOINT_COLUMNS}) "
    'SELECT t.id, c.version, c.node, c.step, c.log_length, c."values", c."window", '
    "c.created_at FROM checkpoints AS c "
    "JOIN threads_4 AS t ON t.user_id = c.user_id AND t.thread_id = c.thread_id "
    "ORDER BY t.id, c.version",
    "DROP TABLE messages",
    "DROP TABLE checkpoints",
    "DROP TABLE threads",
    "ALTER TABLE threads_4 RENAME TO threads",
    "ALTER TABLE messages_4 RENAME TO messages",
    "ALTER TABLE checkpoints_4 RENAME TO checkpoints",
    "CREATE INDEX threads_recent ON threads (user_id, updated_at DESC, thread_id)",
    """CREATE TABLE leases_4 (
        user_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL,
        stop TEXT,
        PRIMARY KEY (user_id, thread_id)
    ) WITHOUT ROWID""",
    "INSERT INTO leases_4 (user_id, thread_id, owner, expires_at, stop) "
    "SELECT user_id, thread_id, owner, expires_at, stop FROM leases",
    "DROP TABLE leases",
    "ALTER TABLE leases_4 RENAME TO leases",
)
"""Migration 4: thread rows get an integer id; the log and checkpoints are keyed by it."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE threads (
            user_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            log_length INTEGER NOT NULL,
            "values" TEXT NOT NULL,
            "window" TEXT NOT NULL,
            metadata TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, thread_id)
        )""",
        "CREATE INDEX threads_recent ON threads (user_id, updated_at DESC, thread_id)",
        """CREATE TABLE messages (
            user_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            role TEXT NOT NULL,
            usage TEXT,
            body TEXT NOT NULL,
            PRIMARY KEY (user_id, thread_id, seq)
        )""",
        """CREATE TABLE checkpoints (
            user_id TEXT NOT NULL,
            thread_id TEXT NOT NULL,
            version INTEGER NOT NULL,
            node TEXT NOT NULL,
            step INTEGER NOT NULL,
            log_length INTEGER NOT NULL,
            "values" TEXT NOT NULL,
            "window" TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (user_id, thread_id, version)
        )""",
    ),
    (  # 2: thread identity; threads stored before it share the incarnation 'legacy'
        f"ALTER TABLE threads ADD COLUMN incarnation TEXT NOT NULL DEFAULT '{LEGACY_INCARNATION}'",
    ),
    (leases.LEASES_TABLE,),  # 3: one run per thread at a time
    _INTEGER_KEYS,  # 4
    (  # 5: branches inside a thread; NULL is the checkpoint before (every older row)
        "ALTER TABLE checkpoints ADD COLUMN parent_version INTEGER",
    ),
    (  # 6: a message's id and timestamp in columns of their own (_sqlite_rows); NULL in older rows
        "ALTER TABLE messages ADD COLUMN mid BLOB",
        "ALTER TABLE messages ADD COLUMN ts TEXT",
    ),
)
"""Ordered schema changes of the ``threads`` component (recorded in ``schema_versions``).

Append only."""

THREADS = Component("threads", MIGRATIONS, legacy_table="schema_version")
"""The thread tables; ``schema_version`` recorded them before ``schema_versions``."""
