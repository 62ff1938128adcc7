"""``tenxgraph media``: list a tenant's stored media and collect what no thread references.

Which store: ``--media`` names it (a directory: ``FilesystemMediaStore``; a
``.db``/``.sqlite``/``.sqlite3`` file: ``SqliteMediaStore``; a
``postgresql://`` DSN: ``PgMediaStore``); without it, the store that goes
with the threads' location: the directory beside a SQLite file
(``<file>-media``), or the same Postgres database and schema.

Also here: bundling a thread's media into a ``threads export`` and putting
them back on import, so an exported thread moves between databases whole.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.locations import is_postgres
from tenxgraph.cli.render import Console

if TYPE_CHECKING:  # loaded by the commands only, not by `--help`
    from tenxgraph.core.state.ids import ThreadKey
    from tenxgraph.storage.checkpointer.base import Checkpointer
    from tenxgraph.storage.media.base import MediaStore

__all__ = [
    "add_media_commands",
    "add_thread_media_options",
    "bundle_media",
    "delete_with_media",
    "import_thread",
    "list_media",
    "make_media_store",
    "open_media_store",
    "run_gc",
    "run_import",
    "run_media",
]

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_MEDIA_HELP = (
    "media store: a directory, a SQLite file or a postgresql:// DSN (default: the store "
    "beside the threads: <db>-media, or the same Postgres schema)"
)

Location = Callable[..., None]
"""``main._location``: adds the threads' location options to a parser."""


def add_media_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    parser_class: type[argparse.ArgumentParser],
    location: Location,
) -> None:
    """``tenxgraph media ls`` and ``tenxgraph media gc``."""
    media = commands.add_parser("media", help="list stored media, delete what no thread uses")
    actions = media.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=parser_class
    )
    listing = actions.add_parser("ls", help="a user's media: size, type, whether a thread uses it")
    location(listing, positional=True)
    listing.add_argument("--media", help=_MEDIA_HELP)
    gc = actions.add_parser("gc", help="delete media no thread of its user references")
    location(gc, positional=True)
    gc.add_argument("--media", help=_MEDIA_HELP)
    gc.add_argument(
        "--grace",
        type=float,
        default=3600.0,
        help="keep media put less than this many seconds ago (default 3600: a save in "
        "progress may not have stored its message yet)",
    )
    gc.add_argument("--dry-run", action="store_true", help="list what would go, delete nothing")
    gc.add_argument(
        "--all-users", action="store_true", help="every user of the store (default: --user)"
    )


def add_thread_media_options(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    export: argparse.ArgumentParser,
    location: Location,
) -> None:
    """``threads export --with-media`` and ``threads import FILE``."""
    export.add_argument(
        "--with-media", action="store_true", help="bundle the media the thread references"
    )
    export.add_argument("--media", help=_MEDIA_HELP)
    imported = actions.add_parser("import", help="create a thread from a threads export")
    imported.add_argument("file", help="the JSON written by threads export")
    location(imported)
    imported.add_argument("--thread", help="thread id to create (default: the exported one)")
    imported.add_argument("--media", help=_MEDIA_HELP)


async def run_media(args: argparse.Namespace, console: Console) -> None:
    """Run ``tenxgraph media ACTION``."""
    from tenxgraph.cli.locations import open_checkpointer
    from tenxgraph.core.state.ids import DEFAULT_USER

    location = args.location or args.db
    user = DEFAULT_USER if args.user is None else args.user
    async with (
        open_checkpointer(location, create=False) as checkpointer,
        open_media_store(location, args.media) as store,
    ):
        if args.action == "ls":
            await list_media(store, checkpointer, user, console)
        else:
            await run_gc(
                store,
                checkpointer,
                console,
                user=None if args.all_users else user,
                grace=args.grace,
                dry_run=args.dry_run,
            )


async def run_import(args: argparse.Namespace, console: Console) -> None:
    """Run ``tenxgraph threads import FILE``."""
    import asyncio  # not at the top: `tenxgraph --help` loads this module, and no asyncio

    from tenxgraph.cli.locations import open_checkpointer

    try:
        data = json.loads(await asyncio.to_thread(Path(args.file).read_text, "utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {args.file}: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"{args.file} is not a thread export (a JSON object)")
    async with (
        open_checkpointer(args.db) as checkpointer,
        open_media_store(args.db, args.media) as store,
    ):
        key = await import_thread(checkpointer, store, data, user=args.user, thread=args.thread)
    media = len(data.get("media") or [])
    console.line(f"imported thread {key.thread_id} (user {key.user_id}) with {media} media")


def make_media_store(location: str, media: str | None = None) -> MediaStore:
    """The media store ``media`` names, else the one beside the threads at ``location``."""
    from tenxgraph.storage.media import FilesystemMediaStore, PgMediaStore, SqliteMediaStore

    if media is None:
        if is_postgres(location):
            return PgMediaStore(location, pool_size=2)
        return FilesystemMediaStore.next_to(location)
    if is_postgres(media):
        return PgMediaStore(media, pool_size=2)
    if Path(media).suffix in _SQLITE_SUFFIXES:
        return SqliteMediaStore(media)
    if Path(media).exists() and not Path(media).is_dir():
        raise CliError(
            f"{media} is a file but not a SQLite one (.db, .sqlite); --media needs a "
            "directory, a SQLite file or a postgresql:// DSN"
        )
    return FilesystemMediaStore(media)


@asynccontextmanager
async def open_media_store(location: str, media: str | None = None) -> AsyncIterator[MediaStore]:
    """``make_media_store``, closed when the block ends."""
    store = make_media_store(location, media)
    try:
        yield store
    finally:
        await store.aclose()


async def list_media(
    store: MediaStore, checkpointer: Checkpointer, user: str, console: Console
) -> int:
    """Print the tenant's media (size, type, age, referenced or not); return how many."""
    from tenxgraph.storage.media.gc import areferenced_keys

    objects = await store.alist_media(user)
    if not objects:
        console.note(f"no media for user {user!r}")
        return 0
    referenced = await areferenced_keys(checkpointer, user)
    console.line(f"{'key':<16} {'bytes':>12} {'type':<24} {'stored':<19}  used", "bold")
    for info in objects:
        stored = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.created_at))
        used = "yes" if info.key in referenced else console.paint("no", "yellow")
        console.line(f"{info.key[:16]} {info.size:>12} {info.mime_type:<24} {stored}  {used}")
    total = sum(info.size for info in objects)
    console.note(f"{len(objects)} objects, {total} bytes; {len(referenced)} referenced by threads")
    return len(objects)


async def run_gc(
    store: MediaStore,
    checkpointer: Checkpointer,
    console: Console,
    *,
    user: str | None,
    grace: float,
    dry_run: bool,
) -> int:
    """Delete (or with ``dry_run`` list) unreferenced media older than ``grace`` seconds."""
    from tenxgraph.storage.media.gc import acollect

    report = await acollect(checkpointer, store, user_id=user, grace=grace, dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    for info in report.deleted:
        console.line(f"{verb} {info.key[:16]} {info.size:>12} bytes (user {info.user_id})")
    console.line(
        f"{verb} {len(report.deleted)} objects, {report.freed_bytes} bytes; kept "
        f"{report.referenced} referenced and {report.young} younger than {grace:g} s"
    )
    return len(report.deleted)


async def delete_with_media(checkpointer: Checkpointer, key: ThreadKey, location: str) -> int:
    """Delete the thread, then the media only it referenced from the store beside the threads.

    Returns how many media went. Media put less than an hour ago are left to
    ``media gc`` (see its ``--grace``). A missing thread is a ``CliError``.
    """
    import asyncio

    from tenxgraph.storage.media.gc import arelease, thread_media_keys

    keys = await thread_media_keys(checkpointer, key)
    if not await checkpointer.adelete_thread(key):
        raise CliError(f"no thread {key.thread_id!r} for user {key.user_id!r}")
    if not keys:
        return 0
    if not is_postgres(location) and not await asyncio.to_thread(Path(f"{location}-media").is_dir):
        return 0
    async with open_media_store(location) as store:
        report = await arelease(checkpointer, store, key, keys)
    return len(report.deleted)


async def bundle_media(store: MediaStore, key: ThreadKey, messages: list[Any]) -> list[Any]:
    """The stored media the exported ``messages`` (JSON) reference, as JSON with base64 bytes."""
    from tenxgraph.core.state.message import MessagesAdapter
    from tenxgraph.storage.media.gc import message_media_keys

    bundled = []
    for media in sorted(message_media_keys(MessagesAdapter.validate_python(messages))):
        info = await store.ainfo(media, user_id=key.user_id)
        if info is None:
            raise CliError(f"thread {key.thread_id!r} references media {media} the store lacks")
        data = await store.aget(media, user_id=key.user_id)
        bundled.append(
            {
                "key": media,
                "mime_type": info.mime_type,
                "size": info.size,
                "data_base64": base64.b64encode(data).decode("ascii"),
            }
        )
    return bundled


async def import_thread(
    checkpointer: Checkpointer,
    store: MediaStore | None,
    data: dict[str, Any],
    *,
    user: str | None = None,
    thread: str | None = None,
) -> ThreadKey:
    """Create a thread from a ``threads export`` (its media first, when bundled).

    ``user`` and ``thread`` override the exported ids. The thread must not
    exist. Bundled media are checked against their key (the SHA-256) and put
    before the thread is saved, so its refs resolve as soon as it exists.
    """
    from tenxgraph.core.state.ids import ThreadKey
    from tenxgraph.core.state.message import MessagesAdapter
    from tenxgraph.storage.checkpointer.base import ThreadWrite

    try:
        key = ThreadKey(thread or data["thread_id"], user or data.get("user_id") or "default")
        messages = MessagesAdapter.validate_python(data["messages"])
        window = [(int(start), int(end)) for start, end in data["window"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"not a thread export: {exc}") from None
    if await checkpointer.aversion(key) is not None:
        raise CliError(f"thread {key.thread_id!r} of user {key.user_id!r} exists already")
    bundled = data.get("media") or []
    if bundled:
        if store is None:
            raise CliError("the export bundles media: give a media store to put them in")
        for item in bundled:
            await _restore(store, key, item)
    write = ThreadWrite(
        0,
        messages,
        dict(data.get("values") or {}),
        window,
        node="import",
        step=0,
        metadata=dict(data.get("metadata") or {}),
    )
    await checkpointer.asave(key, write)
    return key


async def _restore(store: MediaStore, key: ThreadKey, item: dict[str, Any]) -> None:
    data = base64.b64decode(item["data_base64"], validate=True)
    if hashlib.sha256(data).hexdigest() != item["key"]:
        raise CliError(f"bundled media {item['key']} does not match its bytes (damaged export)")
    await store.aput(data, item.get("mime_type"), user_id=key.user_id)
