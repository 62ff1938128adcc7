"""Time travel: a thread's past states, edits outside a run, and forks into new threads.

Every saved step is a checkpoint holding the small state row of that moment
(values and context window) over the append-only log, so a past state is
rebuilt from the checkpoint plus the log entries of its window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.graph._updates import StateSchema
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import StateError, ThreadNotFoundError
from tenxgraph.storage.checkpointer.base import Checkpoint, Checkpointer, StoredThread, ThreadWrite
from tenxgraph.storage.checkpointer.state_codec import decode_state

__all__ = [
    "CheckpointInfo",
    "StateSnapshot",
    "fork_thread",
    "state_history",
    "update_metadata",
    "update_state",
]

S = TypeVar("S", bound=AgentState)

UPDATE_NODE = "update_state"
"""The node name recorded for a checkpoint written by ``update_state``."""
METADATA_NODE = "update_metadata"
"""The node name recorded for a checkpoint written by ``update_metadata``."""


@dataclass(frozen=True, slots=True)
class StateSnapshot(Generic[S]):
    """A thread's state as it was at one checkpoint."""

    version: int
    node: str
    """The node whose step wrote this checkpoint."""
    step: int
    created_at: float
    state: S
    parent_version: int | None = None
    """The checkpoint this one continues from (see ``Checkpoint.parent_version``): the
    history of a thread that branched is a tree, each branch readable at its versions."""


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """What a checkpoint records besides its state: enough to choose checkpoints cheaply."""

    version: int
    node: str
    """The node whose step wrote this checkpoint (``update_state`` for a state update)."""
    step: int
    status: str
    """The run status the checkpoint saved (``idle``, ``completed``, ``interrupted``...)."""
    created_at: float
    parent_version: int | None = None
    """The checkpoint this one continues from (None for the thread's first)."""


def _info(checkpoint: Checkpoint) -> CheckpointInfo:
    meta = checkpoint.values.get("execution_meta")
    status = meta.get("status", "idle") if isinstance(meta, dict) else "idle"
    return CheckpointInfo(
        checkpoint.version,
        checkpoint.node,
        checkpoint.step,
        str(status),
        checkpoint.created_at,
        checkpoint.parent_version,
    )


async def state_history(
    checkpointer: Checkpointer,
    key: ThreadKey,
    state_class: type[S],
    limit: int | None,
    before: int | None = None,
    where: Callable[[CheckpointInfo], bool] | None = None,
) -> list[StateSnapshot[S]]:
    """The thread's checkpoints, newest first, each with its state rebuilt.

    ``before`` and ``where`` choose checkpoints on what they record, so only
    the states of the (at most ``limit``) chosen ones are rebuilt.
    """
    filtered = before is not None or where is not None
    checkpoints = await checkpointer.alist_checkpoints(key, limit=None if filtered else limit)
    if filtered:
        checkpoints = [
            c
            for c in checkpoints
            if (before is None or c.version < before) and (where is None or where(_info(c)))
        ][:limit]
    return [
        StateSnapshot(
            c.version,
            c.node,
            c.step,
            c.created_at,
            await _state_at(checkpointer, key, state_class, c),
            c.parent_version,
        )
        for c in checkpoints
    ]


async def update_state(
    checkpointer: Checkpointer,
    key: ThreadKey,
    schema: StateSchema,
    values: Any,
    as_node: str | None,
    lease: str | None = None,
    at: int | None = None,
) -> int:
    """Merge ``values`` as a node update would, saved as a new checkpoint; return its version.

    The run status is left as it is, so a thread paused at an interrupt can
    be edited and then resumed. ``at``: update the state of that older
    checkpoint instead, branching the thread there (as a run from it does).
    """
    session = ThreadSession(checkpointer, key)
    session.lease = lease
    state = await session.load(schema.state_class, at)
    if state is None:
        raise ThreadNotFoundError(f"thread {key.thread_id!r} does not exist for {key.user_id!r}")
    applied = schema.apply(state, values, "update_state")
    session.record(applied.messages)
    await session.save(state, as_node or UPDATE_NODE, state.execution_meta.step)
    return session.version


async def update_metadata(
    checkpointer: Checkpointer, key: ThreadKey, changes: Mapping[str, Any], lease: str
) -> int:
    """Merge ``changes`` into the thread's metadata, the state row saved again; the version.

    The new checkpoint (node ``update_metadata``) records when the metadata
    changed; the values and context window are the thread's, unchanged.
    """
    stored = await checkpointer.aload(key)
    if stored is None:
        raise ThreadNotFoundError(f"thread {key.thread_id!r} does not exist for {key.user_id!r}")
    _, version = await checkpointer.asave(
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
            lease=lease,
        ),
    )
    return version


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
    checkpoint = await checkpointer.aget_checkpoint(key, version)
    if checkpoint is not None:
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
