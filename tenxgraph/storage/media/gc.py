"""Garbage collection: deleting the media no thread of its tenant references any more.

**Decision: a scan, not a reference count.** Which media a thread uses is
written in its messages (``graph://media/{key}`` urls); the collector reads
the tenant's threads and deletes the tenant's objects none of them names.
A reference-count table would make a release cheaper, but it is a second
record of the same fact, written in every save's transaction and wrong
after any bug or manual edit; the scan is always right and needs nothing
from a backend beyond the ``Checkpointer`` contract, so it works with any
checkpointer and any store. It costs a read of the tenant's messages
(decoded, but small: offloaded media are refs).

**The put/delete race, and the grace period.** A save puts its media first
and commits the message referencing them after; a collector scanning in
between sees the object unreferenced. So objects younger than ``grace``
seconds (by their first put) are never deleted. Content addressing leaves
one case: a save whose put found the bytes already stored (an old object)
while a collector was deleting it. The save checks its objects after its
commit and puts back any that are gone (``Offloaded.arestore``); a
collector's delete landing after that check, within its few milliseconds
between reading the object and deleting it, is the one window left.

The store is assumed to be this checkpointer's (or its tenants'): media a
different application references are not seen by the scan.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from tenxgraph._sync import run_sync
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import InvalidMediaKeyError
from tenxgraph.storage.checkpointer.base import Checkpointer
from tenxgraph.storage.media._keys import is_media_url, media_key
from tenxgraph.storage.media.base import MediaInfo, MediaStore
from tenxgraph.storage.media.offload import DEFAULT_GRACE
from tenxgraph.storage.media.resolve import media_refs

__all__ = [
    "GcReport",
    "acollect",
    "areferenced_keys",
    "arelease",
    "collect",
    "message_media_keys",
    "thread_media_keys",
]

_PAGE = 500


@dataclass(slots=True)
class GcReport:
    """What a collection found and did."""

    deleted: list[MediaInfo] = field(default_factory=list)
    """Objects deleted (or, in a dry run, that would be)."""
    referenced: int = 0
    """Objects kept because a thread references them."""
    young: int = 0
    """Unreferenced objects kept because they are younger than the grace period."""

    @property
    def freed_bytes(self) -> int:
        """The size of what was deleted."""
        return sum(info.size for info in self.deleted)


async def thread_media_keys(checkpointer: Checkpointer, key: ThreadKey) -> set[str]:
    """The media keys the thread's whole log references."""
    keys: set[str] = set()
    offset = 0
    while True:
        page = await checkpointer.alist_messages(key, offset=offset, limit=_PAGE)
        keys.update(message_media_keys(stored.message for stored in page))
        if len(page) < _PAGE:
            return keys
        offset += len(page)


async def areferenced_keys(
    checkpointer: Checkpointer, user_id: str, *, exclude: ThreadKey | None = None
) -> set[str]:
    """The media keys any thread of ``user_id`` references (but ``exclude``)."""
    keys: set[str] = set()
    for thread in await checkpointer.alist_threads(user_id):  # one listing: no page skipped
        if thread.key != exclude:
            keys |= await thread_media_keys(checkpointer, thread.key)
    return keys


async def acollect(
    checkpointer: Checkpointer,
    store: MediaStore,
    *,
    user_id: str | None = None,
    grace: float = DEFAULT_GRACE,
    dry_run: bool = False,
) -> GcReport:
    """Delete the media of ``user_id`` (None: every tenant of the store) no thread references.

    Objects put less than ``grace`` seconds ago are kept (see the module
    docstring). ``dry_run`` reports without deleting.
    """
    report = GcReport()
    tenants = [user_id] if user_id is not None else await store.alist_tenants()
    for tenant in tenants:
        started = time.time()
        referenced = await areferenced_keys(checkpointer, tenant)
        after: str | None = None
        while page := await store.alist_media(tenant, after=after, limit=_PAGE):
            after = page[-1].key
            for info in page:
                await _consider(store, info, referenced, started - grace, dry_run, report)
    return report


async def _consider(
    store: MediaStore,
    info: MediaInfo,
    referenced: set[str],
    put_before: float,
    dry_run: bool,
    report: GcReport,
) -> None:
    if info.key in referenced:
        report.referenced += 1
    elif info.created_at >= put_before:
        report.young += 1
    elif dry_run or await store.adelete(info.key, user_id=info.user_id):
        report.deleted.append(info)


def collect(
    checkpointer: Checkpointer,
    store: MediaStore,
    *,
    user_id: str | None = None,
    grace: float = DEFAULT_GRACE,
    dry_run: bool = False,
) -> GcReport:
    """Sync ``acollect``."""
    return run_sync(acollect(checkpointer, store, user_id=user_id, grace=grace, dry_run=dry_run))


async def arelease(
    checkpointer: Checkpointer,
    store: MediaStore,
    key: ThreadKey,
    keys: Iterable[str],
    *,
    grace: float = DEFAULT_GRACE,
) -> GcReport:
    """After ``key``'s thread is gone: delete those of ``keys`` no other thread references.

    What a checkpointer's ``adelete_thread`` runs with the keys the thread
    held; objects within ``grace`` are left to a later ``acollect``.
    """
    report = GcReport()
    wanted = set(keys)
    if not wanted:
        return report
    started = time.time()
    referenced = await areferenced_keys(checkpointer, key.user_id, exclude=key)
    for media in sorted(wanted):
        info = await store.ainfo(media, user_id=key.user_id)
        if info is not None:
            await _consider(store, info, referenced, started - grace, False, report)
    return report


def message_media_keys(messages: Iterable[object]) -> set[str]:
    """The keys of the media-store refs in messages or blocks (malformed urls skipped)."""
    keys = set()
    for ref in media_refs(messages):
        if ref.kind == "url" and is_media_url(ref.url):
            try:
                keys.add(media_key(ref))
            except InvalidMediaKeyError:  # a malformed url names nothing the store has
                continue
    return keys
