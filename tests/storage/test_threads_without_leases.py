"""A user's backend that stores threads but offers no leases (only ``Checkpointer``'s methods).

``ThreadLeases`` is a capability apart from the ``Checkpointer`` contract:
such a backend is a whole checkpointer (it passes the checkpointer suite),
and a graph refuses it when compiled, naming the missing contract, since its
runs would have nothing to hold their thread by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.ids import DEFAULT_USER, ThreadKey
from tenxgraph.errors import GraphBuildError
from tenxgraph.storage import ThreadLeases
from tenxgraph.storage.checkpointer import (
    Checkpoint,
    Checkpointer,
    InMemoryCheckpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
    ThreadStamp,
    ThreadWrite,
    Window,
)
from tenxgraph.testing.checkpointers import CheckpointerContract, MakeCheckpointer


class ThreadsOnly(Checkpointer):
    """Exactly the abstract methods of ``Checkpointer``, kept by an in-memory store.

    Like any backend without leases, it ignores a save's lease fields (the
    store it hands writes to would check them).
    """

    def __init__(self, store: InMemoryCheckpointer) -> None:
        self._store = store

    async def aload(self, key: ThreadKey) -> StoredThread | None:
        return await self._store.aload(key)

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        return await self._store.asave(
            key, dataclasses.replace(write, lease=None, release_lease=False)
        )

    async def alist_messages(
        self, key: ThreadKey, *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        return await self._store.alist_messages(key, offset=offset, limit=limit)

    async def alist_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        return await self._store.alist_threads(
            user_id, metadata=metadata, offset=offset, limit=limit
        )

    async def adelete_thread(self, key: ThreadKey) -> bool:
        return await self._store.adelete_thread(key)

    async def alist_checkpoints(
        self, key: ThreadKey, *, limit: int | None = None
    ) -> Sequence[Checkpoint]:
        return await self._store.alist_checkpoints(key, limit=limit)

    async def aload_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        return await self._store.aload_messages(key, window)

    async def arewind(
        self, key: ThreadKey, stamp: ThreadStamp, to_version: int, *, lease: str | None = None
    ) -> ThreadStamp | None:
        return await self._store.arewind(key, stamp, to_version)


class TestThreadsOnlyBackend(CheckpointerContract):
    """The checkpointer suite asks nothing of leases."""

    @pytest.fixture
    def make_checkpointer(self) -> MakeCheckpointer:
        """A new store per checkpointer, as the memory backend of ``tests/storage`` does."""
        return lambda **options: ThreadsOnly(InMemoryCheckpointer(**options))


def test_a_backend_without_leases_is_a_checkpointer_but_not_a_thread_leases() -> None:
    backend = ThreadsOnly(InMemoryCheckpointer())
    assert isinstance(backend, Checkpointer)
    assert not isinstance(backend, ThreadLeases)


def test_compile_refuses_a_checkpointer_without_leases_naming_the_contract() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("reply", lambda state: Message.text_message("hi", role="assistant"))
    graph.set_entry_point("reply")
    with pytest.raises(GraphBuildError, match="ThreadsOnly does not implement ThreadLeases"):
        graph.compile(ThreadsOnly(InMemoryCheckpointer()))
    graph.compile(InMemoryCheckpointer())  # a shipped backend is both
    graph.compile()  # and no checkpointer needs no leases
