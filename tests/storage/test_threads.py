"""One in-process checkpointer shared by OS threads, each running its own event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError
from tenxgraph.storage.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    SqliteCheckpointer,
    ThreadWrite,
)
from tenxgraph.testing._checkpointer_base import save
from tests.storage.conftest import MakeCheckpointer

THREADS = 6
SAVES = 20


@pytest.fixture(params=["memory", "sqlite"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Checkpointer:
    if request.param == "memory":
        return InMemoryCheckpointer()
    return SqliteCheckpointer(tmp_path / "threads.db")


def test_threads_appending_with_retries_lose_nothing(shared: Checkpointer) -> None:
    """Every thread retries on conflict: all messages end up in the log, each exactly once."""
    key = ThreadKey("busy", "alice")

    async def worker(number: int) -> None:
        for index in range(SAVES):
            message = Message.text_message(f"{number}-{index}")
            while True:
                stored = await shared.aload(key)
                version, length = (0, 0) if stored is None else (stored.version, stored.log_length)
                write = ThreadWrite(version, [message], {}, [(0, length + 1)], node="w", step=0)
                try:
                    await save(shared, key, write)
                    break
                except ConflictError:
                    continue  # another thread saved first: reload and retry

    threads = [
        threading.Thread(target=asyncio.run, args=(worker(number),)) for number in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    async def check() -> None:
        log = [m.message.text() for m in await shared.alist_messages(key)]
        assert sorted(log) == sorted(f"{n}-{i}" for n in range(THREADS) for i in range(SAVES))
        stored = await shared.aload(key)
        assert stored is not None
        assert stored.version == THREADS * SAVES
        assert len(stored.context) == THREADS * SAVES
        await shared.aclose()

    asyncio.run(check())


async def test_the_tenants_holding_threads_are_listed_with_their_counts(
    make_checkpointer: MakeCheckpointer,
) -> None:
    checkpointer = make_checkpointer()
    assert await checkpointer.alist_tenants() == {}
    for thread_id, user in [("a", "ada"), ("b", "ada"), ("c", "bob")]:
        await save(checkpointer, ThreadKey(thread_id, user), ThreadWrite(0, [], {}, [], "n", 0))
    assert await checkpointer.alist_tenants() == {"ada": 2, "bob": 1}
    await checkpointer.adelete_thread(ThreadKey("c", "bob"))
    assert await checkpointer.alist_tenants() == {"ada": 2}
