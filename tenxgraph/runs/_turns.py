"""Whole turns: discarding a turn that did not finish.

A *turn* is what one input starts: its input is saved first (as the
checkpoint labelled ``__start__``), then each step. ``execution_meta.turn_start``
records the thread's version before the turn, so an unfinished turn (its
run failed, was stopped, died or is paused at an interrupt) can be discarded
as a whole: the thread goes back to that version and the turn's messages
leave the log, so no later turn ever follows half of it.
"""

from __future__ import annotations

from typing import Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer.base import Checkpointer

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
    await checkpointer.arewind(key, stored.stamp, turn_start, lease=lease)
    return True
