"""Thread writes the run loop does not make: an empty thread with metadata, a metadata change.

LangGraph's API creates a thread before anything runs on it and lets its
metadata change at any time; a tenxgraph thread exists once saved and
carries metadata in its saves. So creating one saves the graph's fresh
state (no messages) with the metadata, and changing metadata saves the
thread's current row again with the new metadata, a new checkpoint (node
``update_metadata``). Both hold the thread's lease like a run, so they
never interleave with one: a thread a run holds answers 409.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from tenxgraph.core.graph import CompiledGraph
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ThreadNotFoundError
from tenxgraph.runs import LeasePolicy, ThreadLease, take_thread
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadWrite
from tenxgraph.storage.checkpointer.state_codec import encode_values

__all__ = ["create_empty_thread", "holding", "merge_metadata"]

CREATE_NODE = "create_thread"
METADATA_NODE = "update_metadata"


def _checkpointer(graph: CompiledGraph[Any]) -> Checkpointer:
    assert graph.checkpointer is not None  # create_app refuses a graph without one
    return graph.checkpointer


@asynccontextmanager
async def holding(graph: CompiledGraph[Any], key: ThreadKey) -> AsyncIterator[ThreadLease]:
    """Hold ``key``'s lease while writing it; a thread a run holds raises ``ThreadBusyError``."""
    policy = LeasePolicy(lease_seconds=graph.leases.lease_seconds, strategy="reject")
    lease = await take_thread(_checkpointer(graph), key, "api", policy)
    try:
        yield lease
    finally:
        await lease.release()


async def create_empty_thread(
    graph: CompiledGraph[Any], key: ThreadKey, metadata: Mapping[str, Any]
) -> bool:
    """Save a new thread holding the graph's fresh state; False if it exists already."""
    checkpointer = _checkpointer(graph)
    async with holding(graph, key) as lease:
        if await checkpointer.aversion(key) is not None:
            return False
        await checkpointer.asave(
            key,
            ThreadWrite(
                expected_version=0,
                new_messages=[],
                values=encode_values(graph._fresh_state()),
                window=[],
                node=CREATE_NODE,
                step=0,
                metadata=dict(metadata),
                lease=lease.owner,
            ),
        )
    return True


async def merge_metadata(
    graph: CompiledGraph[Any], key: ThreadKey, changes: Mapping[str, Any]
) -> None:
    """Merge ``changes`` into the thread's metadata (a key set to None stays None)."""
    checkpointer = _checkpointer(graph)
    async with holding(graph, key) as lease:
        stored = await checkpointer.aload(key)
        if stored is None:
            raise ThreadNotFoundError(f"thread {key.thread_id!r} not found")
        await checkpointer.asave(
            key,
            ThreadWrite(
                expected_version=stored.version,
                expected_incarnation=stored.incarnation,
                new_messages=[],
                values=stored.values,
                window=stored.window,
                node=METADATA_NODE,
                step=int(stored.values.get("execution_meta", {}).get("step", 0)),
                metadata={**stored.metadata, **changes},
                lease=lease.owner,
            ),
        )
