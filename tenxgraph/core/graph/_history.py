"""Time travel: a thread's past states, edits outside a run, and forks into new threads.

Every saved step is a checkpoint holding the small state row of that moment
(values and context window) over the append-only log, so a past state is
rebuilt from the checkpoint plus the log entries of its window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.graph._updates import StateSchema
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import StateError, ThreadNotFoundError
from tenxgraph.storage.checkpointer.base import Checkpoint, Checkpointer, StoredThread, ThreadWrite
from tenxgraph.storage.checkpointer.state_codec import decode_state

__all__ = ["StateSnapshot", "fork_thread", "state_history", "update_state"]

S = TypeVar("S", bound=AgentState)

UPDATE_NODE = "update_state"
"""The node name recorded for a checkpoint written by ``update_state``."""


@dataclass(frozen=True, slots=True)
class StateSnapshot(Generic[S]):
    """A thread's state as it was at one checkpoint."""

    version: int
    node: str
    """The node whose step wrote this checkpoint."""
    step: int
    created_at: float
    state: S


async def state_history(
    checkpointer: Checkpointer, key: ThreadKey, state_class: type[S], limit: int | None
) -> list[StateSnapshot[S]]:
    """The thread's checkpoints, newest first, each with its state rebuilt."""
    checkpoints = await checkpointer.alist_checkpoints(key, limit=limit)
    return [
        StateSnapshot(
            c.version,
            c.node,
            c.step,
            c.created_at,
            await _state_at(checkpointer, key, state_class, c),
        )
        for c in checkpoints
    ]


async def update_state(
    checkpointer: Checkpointer,
    key: ThreadKey,
    schema: StateSchema,
    values: Any,
    as_node: str | None,
) -> int:
    """Merge ``values`` as a node update would, saved as a new checkpoint; return its version.

    The run status is left as it is, so a thread paused at an interrupt can
    be edited and then resumed.
    """
    session = ThreadSession(checkpointer, key)
    state = await session.load(schema.state_class)
    if state is None:
        raise ThreadNotFoundError(f"thread {key.thread_id!r} does not exist for {key.user_id!r}")
    applied = schema.apply(state, values, "update_state")
    session.record(applied.messages)
    await session.save(state, as_node or UPDATE_NODE, state.execution_meta.step)
    return session.version


async def fork_thread(
    checkpointer: Checkpointer,
    source: ThreadKey,
    version: int | None,
    target: ThreadKey,
    state_class: type[AgentState],
) -> None:
    """Start thread ``target`` from ``source`` as it was at checkpoint ``version`` (or now).

    The new thread's log begins with the messages of that context window;
    its state row is the checkpoint's. The source thread is not touched.
    """
    if await checkpointer.aload(target) is not None:
        raise StateError(f"cannot fork into {target.thread_id!r}: that thread already exists")
    if version is None:
        stored = await checkpointer.aload(source)
        if stored is None:
            raise ThreadNotFoundError(f"thread {source.thread_id!r} does not exist")
        values, messages, node, step = (
            stored.values,
            stored.context,
            "fork",
            int(stored.values.get("execution_meta", {}).get("step", 0)),
        )
    else:
        checkpoint = await _checkpoint(checkpointer, source, version)
        values, node, step = checkpoint.values, "fork", checkpoint.step
        messages = await checkpointer.aload_messages(source, checkpoint.window)
    decode_state(state_class, StoredThread(target, 0, 0, values, [], messages))  # validate first
    await checkpointer.asave(
        target,
        ThreadWrite(
            expected_version=0,
            new_messages=list(messages),
            values=values,
            window=[(0, len(messages))] if messages else [],
            node=node,
            step=step,
            metadata={"forked_from": source.thread_id, "forked_version": version},
        ),
    )


async def state_at(
    checkpointer: Checkpointer, key: ThreadKey, state_class: type[S], version: int
) -> S:
    """The thread's state at checkpoint ``version``."""
    return await _state_at(
        checkpointer, key, state_class, await _checkpoint(checkpointer, key, version)
    )


async def _checkpoint(checkpointer: Checkpointer, key: ThreadKey, version: int) -> Checkpoint:
    for checkpoint in await checkpointer.alist_checkpoints(key):
        if checkpoint.version == version:
            return checkpoint
    raise ThreadNotFoundError(
        f"thread {key.thread_id!r} has no checkpoint {version} (it may have been pruned)"
    )


async def _state_at(
    checkpointer: Checkpointer, key: ThreadKey, state_class: type[S], checkpoint: Checkpoint
) -> S:
    messages = await checkpointer.aload_messages(key, checkpoint.window)
    stored = StoredThread(
        key,
        checkpoint.version,
        checkpoint.log_length,
        checkpoint.values,
        checkpoint.window,
        messages,
    )
    return decode_state(state_class, stored)


def thread_key(config: Mapping[str, Any] | None) -> ThreadKey:
    """The thread a config names; a clear error when it names none."""
    try:
        return ThreadKey.from_config(config or {})
    except ValueError as exc:
        raise StateError(str(exc)) from None
