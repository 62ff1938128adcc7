"""Whole turns: discarding a turn that did not finish.

A *turn* is what one input starts: its input is saved first (as the
checkpoint labelled ``__start__``), then each step. ``execution_meta.turn_start``
records the thread's version before the turn, so an unfinished turn (its
run failed, was stopped, died or is paused at an interrupt) can be discarded
as a whole: the thread goes back to that version and the turn's messages
leave the log, so no later turn ever follows half of it.

A turn that began at or before a branch point (a run or an update from an
older checkpoint) cannot be cut away: the log and the checkpoints after its
start hold the branch left behind too. It is discarded by branching back
instead: the state at the turn's start is saved again as a new checkpoint
whose parent is that start, and nothing is removed.
"""

from __future__ import annotations

from typing import Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer.base import Checkpointer, StoredThread, ThreadWrite

__all__ = ["DIED", "UNFINISHED", "discard_unfinished"]

UNFINISHED = frozenset({"running", "error", "stopped", "interrupted"})
"""Statuses of a thread whose latest turn did not complete."""

DIED = frozenset({"running"})
"""The status a turn keeps when its run died (or lost its thread) before ending it."""


async def discard_unfinished(
    checkpointer: Checkpointer,
    key: ThreadKey,
    lease: str,
    statuses: frozenset[str] = UNFINISHED,
) -> bool:
    """Rewind the thread to before its latest turn if that turn ended in one of ``statuses``.

    Returns True when something was discarded. The caller holds the thread's
    lease (``lease`` fences the rewind). A thread the turn created is deleted.
    """
    stored = await checkpointer.aload(key)
    if stored is None:
        return False
    meta: dict[str, Any] = stored.values.get("execution_meta") or {}
    if meta.get("status") not in statuses:
        return False
    turn_start = meta.get("turn_start")
    if type(turn_start) is not int or not 0 <= turn_start <= stored.version:
        raise StateError(
            f"thread {key.thread_id!r} does not record where its latest turn began "
            f"(execution_meta.turn_start is {turn_start!r}), so it cannot be discarded"
        )
    if turn_start == stored.version:
        return False
    if await _branched_since(checkpointer, key, turn_start, stored.version):
        await _branch_back(checkpointer, stored, turn_start, lease)
    else:
        await checkpointer.arewind(key, stored.stamp, turn_start, lease=lease)
    return True


REWOUND_NODE = "__rollback__"
"""The node recorded for the checkpoint a discarded turn leaves (as ``arewind`` records)."""


async def _branched_since(
    checkpointer: Checkpointer, key: ThreadKey, start: int, version: int
) -> bool:
    """True when a checkpoint after ``start`` begins a branch (its parent is not the one before).

    Reads only the checkpoints after ``start``: a turn's, plus the branch it left.
    """
    newer = await checkpointer.alist_checkpoints(key, limit=version - start)
    return any((c.parent_version or 0) != c.version - 1 for c in newer if c.version > start)


async def _branch_back(
    checkpointer: Checkpointer, stored: StoredThread, start: int, lease: str
) -> None:
    """Save checkpoint ``start``'s state as the thread's, its parent ``start``; nothing removed.

    ``start`` 0 (the turn began the thread): the state before any turn, default values
    and no messages, as a new root.
    """
    key = stored.key
    if start == 0:
        values: dict[str, Any] = {}
        window: list[tuple[int, int]] = []
        step = 0
    else:
        target = await checkpointer.aget_checkpoint(key, start)
        if target is None:
            raise StateError(
                f"thread {key.thread_id!r}: its latest turn began at checkpoint {start}, "
                "which keep_checkpoints dropped, so the turn cannot be discarded"
            )
        values, window, step = target.values, target.window, target.step
    await checkpointer.asave(
        key,
        ThreadWrite(
            expected_version=stored.version,
            expected_incarnation=stored.incarnation,
            new_messages=[],
            values=values,
            window=window,
            node=REWOUND_NODE,
            step=step,
            lease=lease,
            parent_version=start,
        ),
    )
