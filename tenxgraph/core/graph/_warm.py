"""Warm threads: recently finished thread sessions kept in memory, bounded by count and size.

A thread's next run on the same compiled graph then needs one version check
instead of a reload. The check reads the stored stamp (incarnation and
version), so a write by anyone else is never missed, nor a thread deleted and
re-created up to the same version. The cache is bounded twice: by the number of threads
and by the (estimated) bytes their messages hold, because a few threads with
large messages (inline images, long tool outputs) would otherwise pin
hundreds of megabytes with the count far below its limit.
"""

from __future__ import annotations

from collections import OrderedDict

from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.storage.checkpointer.base import ThreadKey

__all__ = ["WarmThreads"]


class WarmThreads:
    """An LRU of ``ThreadSession`` by key, at most ``max_threads`` and ``max_bytes``."""

    def __init__(self, max_threads: int = 128, max_bytes: int = 64 * 2**20) -> None:
        self.max_threads = max_threads
        self.max_bytes = max_bytes
        self._sessions: OrderedDict[ThreadKey, tuple[ThreadSession, int]] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def bytes(self) -> int:
        """The estimated bytes of the messages held by the kept sessions."""
        return self._bytes

    def take(self, key: ThreadKey) -> ThreadSession | None:
        """Remove and return the thread's session (a run takes it while it runs)."""
        kept = self._sessions.pop(key, None)
        if kept is None:
            return None
        self._bytes -= kept[1]
        return kept[0]

    def keep(self, session: ThreadSession) -> None:
        """Keep ``session`` as the newest; evict the oldest ones while over a bound."""
        self.take(session.key)
        size = session.approx_bytes
        if self.max_threads <= 0 or size > self.max_bytes:
            return
        self._sessions[session.key] = (session, size)
        self._bytes += size
        while len(self._sessions) > self.max_threads or self._bytes > self.max_bytes:
            _, (_, evicted) = self._sessions.popitem(last=False)
            self._bytes -= evicted
