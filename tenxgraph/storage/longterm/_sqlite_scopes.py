"""Scope words of ``SqliteMemoryStore``'s full-text index, and how many items each one marks.

Each item's index row holds one *scope word* per tenant and namespace
prefix it is under (a hash of both); a search asks FTS5 for its scope word
AND the query's words, so other tenants' matches never leave the index.

That costs where a scope is large. FTS5's ``bm25()`` counts, once per
query, the rows holding each phrase of the query, the scope word's
included: for a tenant of 100,000 items that walk was most of a search
(8 ms of 9 at the median on the development machine, against 1 ms for
the query's words alone). When a scope holds most of the table, its word
keeps almost nothing out anyway. So the store keeps the number of items
per scope word (``memory_scope_sizes``, changed in the transaction of each
put, delete and purge; the row ``*`` holds the table's total) and a search
leaves the scope word out when its scope is large and at least half the
table: the join with the item rows then checks tenant and prefix, as it
always does. Both plans return the same rows; the sizes choose between
them and nothing else, so a stale count could only cost time.

A file whose items predate the table gets its counts on the first search
(``backfill``, one transaction).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter

from tenxgraph.storage.sql._sqlite import transaction

__all__ = ["LARGE", "count", "purged", "scope_token", "scope_tokens", "use_scope_word"]

LARGE = 20_000
"""Scopes smaller than this always use their word (walking its rows costs under ~1.5 ms)."""

_TOTAL = "*"
"""The row holding the number of items in the table (scope words are digits)."""

_COMPLETE = "complete"
"""The row marking that the counts cover every item."""


def scope_token(user_id: str, prefix: str) -> str:
    """The index word that marks an item of ``user_id`` under ``prefix`` (digits only)."""
    digest = hashlib.blake2b(f"{user_id}\x00{prefix}".encode(), digest_size=12).digest()
    return str(int.from_bytes(digest, "big"))


def scope_tokens(user_id: str, namespace: str) -> list[str]:
    """The scope words of an item: its tenant alone, then each prefix of its namespace."""
    parts = namespace.split("/")
    prefixes = ["", *("/".join(parts[: depth + 1]) for depth in range(len(parts)))]
    return [scope_token(user_id, prefix) for prefix in prefixes]


def count(conn: sqlite3.Connection, user_id: str, namespace: str, delta: int) -> None:
    """Add ``delta`` items to the scopes of ``namespace`` (inside the writer's transaction)."""
    conn.executemany(
        "INSERT INTO memory_scope_sizes (token, items) VALUES (?, ?) "
        "ON CONFLICT (token) DO UPDATE SET items = items + excluded.items",
        [(token, delta) for token in [_TOTAL, *scope_tokens(user_id, namespace)]],
    )


def purged(conn: sqlite3.Connection, gone: list[tuple[str, str]]) -> None:
    """Take the purged items (``(user_id, namespace)`` each) off their scopes."""
    for (user_id, namespace), items in Counter(gone).items():
        count(conn, user_id, namespace, -items)


def use_scope_word(conn: sqlite3.Connection, token: str) -> bool:
    """Whether a search of this scope should ask the index for its word (see the module doc)."""
    sizes = _sizes(conn, token)
    if _COMPLETE not in sizes:
        backfill(conn)
        sizes = _sizes(conn, token)
    size = sizes.get(token, 0)
    return bool(size < LARGE or 2 * size < sizes.get(_TOTAL, 0))


def _sizes(conn: sqlite3.Connection, token: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT token, items FROM memory_scope_sizes WHERE token IN (?, ?, ?)",
        (token, _TOTAL, _COMPLETE),
    )
    return {str(row[0]): int(row[1]) for row in rows}


def backfill(conn: sqlite3.Connection) -> None:
    """Count every item's scopes afresh (a file written before the counts existed)."""
    with transaction(conn, "IMMEDIATE"):
        sizes: Counter[str] = Counter()
        rows = conn.execute(
            "SELECT user_id, namespace, count(*) FROM memory_items GROUP BY user_id, namespace"
        )
        for user_id, namespace, items in rows:
            sizes[_TOTAL] += items
            for token in scope_tokens(user_id, namespace):
                sizes[token] += items
        conn.execute("DELETE FROM memory_scope_sizes")
        conn.executemany(
            "INSERT INTO memory_scope_sizes (token, items) VALUES (?, ?)",
            [*sizes.items(), (_COMPLETE, 1)],
        )
