"""Provider files of uploaded media: remembered once per (endpoint, tenant, key), uploaded once.

``FileIdCache`` maps a media key to the file a provider holds for it. Its
``obtain`` is single-flight: concurrent first requests for the same media
wait for one upload instead of each uploading (a failed upload lets the
next caller try again). ``forget`` drops a key's files from every provider,
for ``MediaResolver`` to delete them at the provider when the store deletes
the media.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from tenxgraph.core.llm._clients import LoopClients

__all__ = ["EXPIRY_MARGIN", "FileIdCache", "ProviderFile", "file_deleter"]

C = TypeVar("C")

EXPIRY_MARGIN = 600.0
"""Seconds before a provider file expires from which it is uploaded again rather than used."""


@dataclass(frozen=True, slots=True)
class ProviderFile:
    """A file uploaded to a provider: its id (Gemini: its URI) and when it expires, if it does."""

    file_id: str
    expires_at: float | None = None
    """UNIX time; None: kept until deleted."""

    def usable(self) -> bool:
        """Whether a request may still name it (not expiring within ``EXPIRY_MARGIN``)."""
        return self.expires_at is None or self.expires_at - EXPIRY_MARGIN > time.time()


class FileIdCache:
    """Provider file ids of uploaded media, by (provider endpoint, tenant, media key).

    Kept in memory by the resolver that owns it. For ids that outlive the
    process, subclass it and override ``get``, ``put`` and ``forget`` (all
    async, so a database can answer); ``obtain`` builds on them.
    """

    def __init__(self) -> None:
        self._files: dict[tuple[str, str], dict[str, ProviderFile]] = {}
        self._flights: dict[tuple[str, str, str], tuple[asyncio.Lock, int]] = {}

    async def get(self, provider: str, user_id: str, key: str) -> ProviderFile | None:
        """The file uploaded for ``key``, or None."""
        return self._files.get((user_id, key), {}).get(provider)

    async def put(self, provider: str, user_id: str, key: str, file: ProviderFile) -> None:
        """Remember the file uploaded for ``key``."""
        self._files.setdefault((user_id, key), {})[provider] = file

    async def forget(self, user_id: str, key: str) -> dict[str, ProviderFile]:
        """Drop the files of ``key`` at every provider; return them by provider endpoint.

        An upload of ``key`` in flight is waited for first, so its file is
        among those returned rather than remembered after the media is gone.
        """
        for ident in [i for i in self._flights if i[1:] == (user_id, key)]:
            async with self._flight(ident):
                pass
        return self._files.pop((user_id, key), {})

    async def obtain(
        self,
        provider: str,
        user_id: str,
        key: str,
        upload: Callable[[], Awaitable[ProviderFile]],
    ) -> ProviderFile:
        """The usable file remembered for ``key``, else ``upload()``'s, remembered.

        Callers asking for the same (provider, tenant, key) at once share one
        upload: the first uploads while the others wait, then find its file.
        If the upload raises, the error reaches its caller and the next
        waiter uploads in turn.
        """
        async with self._flight((provider, user_id, key)):
            known = await self.get(provider, user_id, key)
            if known is not None and known.usable():
                return known
            made = await upload()
            await self.put(provider, user_id, key, made)
            return made

    @asynccontextmanager
    async def _flight(self, ident: tuple[str, str, str]) -> AsyncIterator[None]:
        """Hold the key's lock; the lock is dropped when its last holder or waiter leaves."""
        lock, users = self._flights.get(ident, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._flights[ident] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._flights[ident]
            if users == 1:
                del self._flights[ident]
            else:
                self._flights[ident] = (lock, users - 1)


def file_deleter(
    clients: LoopClients[C], delete: Callable[[C, str], Awaitable[None]]
) -> Callable[[str], Awaitable[None]]:
    """An adapter's ``delete(client, file_id)`` as a resolver's deleter of provider files.

    The deletion runs on whatever loop deletes the media; a client made for
    it there is closed after it.
    """

    async def deleting(file_id: str) -> None:
        async with clients.borrowed() as client:
            await delete(client, file_id)

    return deleting
