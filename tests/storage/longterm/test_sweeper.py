"""The sweeper thread's life: it ends with its store even when nobody closes the store."""

from __future__ import annotations

import gc
import threading

from tenxgraph.storage.longterm import InMemoryStore


def test_a_dropped_store_ends_its_sweeper() -> None:
    """The thread holds the store weakly: dropping the store ends it at its next wake-up."""
    before = set(threading.enumerate())
    store = InMemoryStore(sweep_interval=0.01)
    store.put(("m",), "k", {"v": 1}, ttl=0.01)
    sweepers = [t for t in set(threading.enumerate()) - before if t.name.endswith("sweeper")]
    assert [thread.name for thread in sweepers] == ["tenxgraph-memory-sweeper"]
    del store
    gc.collect()
    sweepers[0].join(timeout=30)
    assert not sweepers[0].is_alive()
