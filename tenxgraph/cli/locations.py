"""Open a checkpointer from what a user types: a SQLite file path or a Postgres DSN."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tenxgraph.cli.errors import CliError

if TYPE_CHECKING:  # the run-time import would load the data model before `--help` prints
    from tenxgraph.storage.checkpointer.base import Checkpointer

__all__ = [
    "DEFAULT_DB",
    "describe_location",
    "is_postgres",
    "make_checkpointer",
    "open_checkpointer",
]

DEFAULT_DB = "tenxgraph.sqlite"
"""The SQLite file ``chat``, ``threads`` and ``run`` use when ``--db`` is not given."""

_PG_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``) connection string."""
    return location.startswith(_PG_SCHEMES)


def describe_location(location: str) -> str:
    """The location for messages: a DSN without its password, or the file path."""
    if not is_postgres(location):
        return location
    scheme, _, rest = location.partition("://")
    credentials, at, host = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return f"{scheme}://{credentials}{at}{host}"


def make_checkpointer(location: str, *, create: bool = True) -> Checkpointer:
    """The checkpointer for ``location`` (connections open on first use).

    With ``create=False`` a SQLite file that does not exist is an error
    instead of a new empty database (reading commands must not create files).
    """
    if is_postgres(location):
        from tenxgraph.storage.checkpointer.postgres import PgCheckpointer

        return PgCheckpointer(location, pool_size=2)
    path = Path(location)
    if path.is_dir():
        raise CliError(f"{location} is a directory; --db needs a SQLite file path")
    if not create and not path.exists():
        raise CliError(f"no database at {location} (pass --db PATH or a postgresql:// DSN)")
    from tenxgraph.storage.checkpointer.sqlite import SqliteCheckpointer

    return SqliteCheckpointer(path)


@asynccontextmanager
async def open_checkpointer(location: str, *, create: bool = True) -> AsyncIterator[Checkpointer]:
    """``make_checkpointer(location)``, closed when the block ends."""
    checkpointer = make_checkpointer(location, create=create)
    try:
        yield checkpointer
    finally:
        await checkpointer.aclose()
