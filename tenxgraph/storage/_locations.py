"""Which checkpointer a setting names: a SQLite file path, or a Postgres DSN with a Redis cache.

A deployment describes its thread store in text (an environment variable, a
command option); this turns that text into a backend, so code above the
storage floor (the server, the command line) never imports a backend module
to do it. The backend module is imported only for the backend named: a
SQLite deployment never loads psycopg or redis.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tenxgraph.errors import ConfigError

if TYPE_CHECKING:
    from tenxgraph.storage.checkpointer.base import Checkpointer

__all__ = ["POSTGRES_SCHEMES", "checkpointer_at", "is_postgres"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""How a Postgres DSN starts; any other location is a file path."""


def is_postgres(location: str | os.PathLike[str]) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) connection string."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def checkpointer_at(
    location: str | os.PathLike[str], *, redis: str | None = None, pool_size: int | None = None
) -> Checkpointer:
    """The checkpointer at ``location``; its connections or file open on first use.

    A Postgres DSN gives a ``PgCheckpointer``, with ``redis`` (a ``redis://``
    URL) as its thread cache and at most ``pool_size`` connections (None: its
    default); anything else is the path of a SQLite file (a
    ``SqliteCheckpointer``, created when first written). A Redis URL or a
    pool size with a SQLite path, or an empty location, raises ``ConfigError``
    before anything is opened: those are Postgres settings.
    """
    if not os.fspath(location):
        raise ConfigError("no thread store given: a SQLite file path or a postgresql:// DSN")
    if is_postgres(location):
        from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

        if pool_size is None:
            return PgCheckpointer(str(location), redis=redis)
        return PgCheckpointer(str(location), redis=redis, pool_size=pool_size)
    if pool_size is not None:
        raise ConfigError("pool_size is a Postgres setting: give a postgresql:// DSN with it")
    if redis:
        raise ConfigError(
            "a Redis cache sits in front of Postgres: give a postgresql:// DSN with the Redis URL"
        )
    from tenxgraph.storage.checkpointer.sqlite import SqliteCheckpointer

    return SqliteCheckpointer(location)
