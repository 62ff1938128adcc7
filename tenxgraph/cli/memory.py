"""``tenxgraph memory``: list, search and delete a user's long-term memories.

The store is the one beside the threads: the same SQLite file
(``SqliteMemoryStore``, its own tables) or the same Postgres database
(``PgMemoryStore``, schema ``tenxgraph``). Namespaces are written with
``/`` between parts (``users/prefs``), as the store shows them. A SQLite
file that does not exist is refused rather than created. Looking is not
using: ``ls`` and ``search`` leave the items' ttls as they are
(``refresh_ttl=False``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.locations import is_postgres
from tenxgraph.cli.render import Console

if TYPE_CHECKING:  # loaded by the commands only, not by `--help`
    from tenxgraph.storage.longterm.base import MemoryItem, MemoryStore

__all__ = ["add_memory_commands", "make_memory_store", "run_memory"]

Location = Callable[..., None]
"""``main._location``: adds the threads' location options to a parser."""


def add_memory_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parser_class: type[argparse.ArgumentParser],
    location: Location,
) -> None:
    """``tenxgraph memory ls``, ``search`` and ``rm``."""
    memory = commands.add_parser("memory", help="list, search and delete long-term memories")
    actions = memory.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=parser_class
    )
    listing = actions.add_parser("ls", help="a user's memories, newest first")
    listing.add_argument("prefix", nargs="?", default="", help="namespace prefix, e.g. users/prefs")
    location(listing)
    _output_options(listing)
    search = actions.add_parser("search", help="a user's memories matching words, best first")
    search.add_argument("query", help="words to look for")
    search.add_argument("--prefix", default="", help="namespace prefix (default: all)")
    location(search)
    _output_options(search)
    remove = actions.add_parser("rm", help="delete one memory")
    remove.add_argument("namespace", help="its namespace, e.g. users/prefs")
    remove.add_argument("key", help="its key")
    location(remove)


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")


def make_memory_store(location: str) -> MemoryStore:
    """The memory store at the threads' ``location`` (a SQLite file or a Postgres DSN)."""
    if is_postgres(location):
        from tenxgraph.storage.longterm import PgMemoryStore

        return PgMemoryStore(location)
    if not Path(location).is_file():
        raise CliError(f"no database at {location} (give --db or a location)")
    from tenxgraph.storage.longterm import SqliteMemoryStore

    return SqliteMemoryStore(location)


def namespace_of(text: str) -> tuple[str, ...]:
    """``users/prefs`` -> ``("users", "prefs")``; ``""`` -> ``()``."""
    return tuple(text.strip("/").split("/")) if text.strip("/") else ()


async def run_memory(args: argparse.Namespace, console: Console) -> None:
    """Run ``tenxgraph memory ACTION``."""
    from tenxgraph.core.state.ids import DEFAULT_USER

    user = DEFAULT_USER if args.user is None else args.user
    async with make_memory_store(args.db) as store:
        if args.action == "rm":
            namespace = namespace_of(args.namespace)
            if not await store.adelete(namespace, args.key, user_id=user):
                raise CliError(f"no memory {args.namespace} {args.key} for user {user}")
            console.line(f"deleted {'/'.join(namespace)} {args.key}")
            return
        query = args.query if args.action == "search" else None
        found = await store.asearch(
            namespace_of(args.prefix),
            query=query,
            limit=args.limit,
            user_id=user,
            refresh_ttl=False,
        )
        for item in found:
            console.line(_json_line(item) if args.json else _text_line(item))
        if not found and not args.json:
            console.note("no memories")


def _text_line(item: MemoryItem) -> str:
    value = json.dumps(item.value, ensure_ascii=False)
    if len(value) > 100:
        value = value[:97] + "..."
    score = "" if item.score is None else f"  ({item.score:.3g})"
    return f"{'/'.join(item.namespace)}  {item.key}  {value}{score}"


def _json_line(item: MemoryItem) -> str:
    return json.dumps(
        {
            "namespace": list(item.namespace),
            "key": item.key,
            "value": item.value,
            "created_at": item.created_at,
            "updated_at": item.updated_at,
            "expires_at": item.expires_at,
            "score": item.score,
        },
        ensure_ascii=False,
    )
