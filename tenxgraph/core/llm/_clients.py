"""One SDK client per event loop.

An async HTTP client's connections belong to the loop that opened them, and
sync entry points may run each call on a different loop. An adapter keeps a
``LoopClients`` and asks it for the running loop's client; a client the
user passed in is used as it is, on the user's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

__all__ = ["LoopClients"]

C = TypeVar("C")


class LoopClients(Generic[C]):
    """Make, cache and close one client per running event loop."""

    def __init__(
        self, make: Callable[[], C], close: Callable[[C], Awaitable[None]], given: C | None = None
    ) -> None:
        self._make = make
        self._close = close
        self._given = given
        self._clients: WeakKeyDictionary[asyncio.AbstractEventLoop, C] = WeakKeyDictionary()

    def get(self) -> C:
        """The given client, or the one made for the running loop."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._make()
        return client

    @asynccontextmanager
    async def borrowed(self) -> AsyncIterator[C]:
        """The running loop's client for one call; a client made for just that call is closed.

        For calls that may come on a loop the model never ran on (a media
        store deleting files from a sync call's helper loop), so no client
        is left open there.
        """
        made = self._given is None and asyncio.get_running_loop() not in self._clients
        client = self.get()
        try:
            yield client
        finally:
            if made:
                await self.aclose()

    async def aclose(self) -> None:
        """Close the client made for the running loop (a given client is its owner's to close)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await self._close(client)
