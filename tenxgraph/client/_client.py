"""``Client``: the async client of a tenxgraph server, one ``Transport`` behind its parts.

``client.assistants``, ``client.threads``, ``client.runs`` and
``client.media`` hold the endpoints; ``SyncClient``
(``tenxgraph.client._sync_client``) runs these same methods to completion,
so each behaviour has one implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from tenxgraph.client._assistants import Assistants
from tenxgraph.client._media import Media
from tenxgraph.client._runs import Runs
from tenxgraph.client._threads import Threads
from tenxgraph.client._transport import Transport

__all__ = ["Client"]


class Client:
    """Talks to a tenxgraph server (or any server of the LangGraph API) from async code.

    ``url`` is the server's base URL; ``api_key`` is sent in the ``X-Api-Key``
    header; ``timeout`` (seconds) bounds each request, except the wait for
    a run's end (``runs.wait``, ``runs.join``) and for a stream's next event,
    which last as long as the run (the server pings idle streams).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._transport = Transport(url, api_key=api_key, headers=headers, timeout=timeout)
        self.assistants = Assistants(self._transport)
        """Find the served graph's assistant; list its tools."""
        self.threads = Threads(self._transport)
        """Create, read, search and delete threads; their state, log and window; direct
        tool calls; rollback of an unfinished turn."""
        self.runs = Runs(self._transport)
        """Stream, wait for, start, join and cancel runs."""
        self.media = Media(self._transport)
        """Store files on the server for messages to refer to, and read them back."""

    async def aclose(self) -> None:
        """Close the kept-alive connections."""
        await self._transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def info(self) -> Any:
        """The server's ``GET /info`` (its version and capabilities)."""
        return await self._transport.request("GET", "/info")
