"""The SQL layer under every store: connections, transactions, migrations per component.

``SqliteDatabase`` (one file, one connection per instance behind a lock, WAL)
and ``PgDatabase`` (a schema on a checked pool, run on a private I/O loop when
it owns its connections) open the database, bring each ``Component``'s
tables up to date with its ordered migrations (recorded per component in
``schema_versions``) and hand out connections and transactions. The stores
above (checkpointers today; media, long-term memory and the run queue next)
keep their own SQL text and use the driver's connection directly.
``PgDatabase`` is imported on first access, so SQLite users never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenxgraph.storage.sql._migrations import Component
from tenxgraph.storage.sql._sqlite import SqliteDatabase

if TYPE_CHECKING:
    from tenxgraph.storage.sql._postgres import PgDatabase

__all__ = ["Component", "PgDatabase", "SqliteDatabase"]


def __getattr__(name: str) -> Any:
    """Import the Postgres layer on first access."""
    if name == "PgDatabase":
        from tenxgraph.storage.sql._postgres import PgDatabase

        return PgDatabase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
