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
from typing import TypeVar

from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadStamp

__all__ = ["WARM_BYTES", "WARM_THREADS", "WarmThreads"]

S = TypeVar("S", bound=AgentState)

WARM_THREADS = 128
"""How many threads a compiled graph keeps warm by default (``compile(warm_threads=...)``)."""
WARM_BYTES = 8 * 2**20
"""The estimated bytes of messages a compiled graph keeps warm by default (``warm_bytes``)."""


class WarmThreads:
    """An LRU of ``ThreadSession`` by key, at most ``max_threads`` and ``max_bytes``."""

    def __init__(self, max_threads: int = WARM_THREADS, max_bytes: int = WARM_BYTES) -> None:
        self.max_threads = max_threads
        self.max_bytes = max_bytes
        self._sessions: OrderedDict[tuple[str, str], tuple[ThreadSession, int]] = OrderedDict()
        """By (user_id, thread_id): a tuple of two strs hashes in C, a ``ThreadKey`` in Python."""
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def bytes(self) -> int:
        """The estimated bytes of the messages held by the kept sessions."""
        return self._bytes

    async def open(
        self,
        checkpointer: Checkpointer,
        key: ThreadKey,
        state_class: type[S],
        stamp: ThreadStamp | None,
    ) -> tuple[ThreadSession, S | None]:
        """The thread's session (taken out of the cache) and state, stored as ``stamp``.

        The warm copy is used only if ``stamp`` is still its stamp: the same
        incarnation at the same version (a thread deleted and re-created since
        may have reached that version too). No stamp means no thread: nothing
        is read. Otherwise the thread is loaded.
        """
        session = self.take(key)
        if stamp is None:
            session = ThreadSession(checkpointer, key)
            session.created = True
            return session, None
        if session is not None and session.stamp == stamp:
            state = session.revive(state_class)
            if state is not None:
                return session, state
        session = ThreadSession(checkpointer, key)
        return session, await session.load(state_class)

    def stamp(self, key: ThreadKey) -> ThreadStamp | None:
        """The stamp of the thread's kept session (None: not kept), leaving it in the cache."""
        kept = self._sessions.get((key.user_id, key.thread_id))
        return None if kept is None else kept[0].stamp

    def take(self, key: ThreadKey) -> ThreadSession | None:
        """Remove and return the thread's session (a run takes it while it runs)."""
        kept = self._sessions.pop((key.user_id, key.thread_id), None)
        if kept is None:
            return None
        self._bytes -= kept[1]
        return kept[0]

    def keep(self, session: ThreadSession) -> None:
        """Keep ``session`` as the newest; evict the oldest others while over a bound.

        The newest session stays whatever its size: its run just held it in
        memory anyway, and a very long thread that is being talked to now is
        the one a reload would cost most. It goes as soon as another thread
        finishes while the cache is over its bounds.

        A session ``open`` made for a thread that did not exist yet
        (``created``) is not kept: a thread run once, as a stateless run's, a
        batch's or an evaluation's, would push the conversations out and leave
        its objects to be freed cold, and the second run of a conversation
        loads one short turn. From then on the thread stays warm.
        """
        key = session.key
        held = (key.user_id, key.thread_id)
        kept = self._sessions.pop(held, None)
        if kept is not None:
            self._bytes -= kept[1]
        if session.created or self.max_threads <= 0:
            return
        size = session.approx_bytes
        self._sessions[held] = (session, size)
        self._bytes += size
        while len(self._sessions) > 1 and (
            len(self._sessions) > self.max_threads or self._bytes > self.max_bytes
        ):
            _, (_, evicted) = self._sessions.popitem(last=False)
            self._bytes -= evicted
