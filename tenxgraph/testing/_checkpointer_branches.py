"""The branch part of the checkpointer contract: checkpoints know their parent.

A run (or a state update) from an older checkpoint branches the thread in
place: its first save sets the state row back to that checkpoint's values
and window and records it as the new checkpoint's parent
(``ThreadWrite.parent_version``), so the checkpoints form a tree, each
branch readable at its versions, while the log only grows. A backend stores
the parent with the checkpoint and answers ``aget_checkpoint``.
"""

from __future__ import annotations

import pytest

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite, Window
from tenxgraph.testing._checkpointer_base import ContractBase

KEY = ThreadKey("branched", "alice")


def save(
    stamp: ThreadStamp | None, text: str, window: Window, parent: int | None = None
) -> ThreadWrite:
    """A write of one message after ``stamp`` (None: creating) with ``parent``."""
    version = 0 if stamp is None else stamp.version
    return ThreadWrite(
        expected_version=version,
        expected_incarnation=None if stamp is None else stamp.incarnation,
        new_messages=[Message.text_message(text)] if text else [],
        values={"by": text},
        window=window,
        node="n",
        step=version,
        parent_version=parent,
    )


class BranchContract(ContractBase):
    """Branches: every checkpoint names its parent; the log stays append-only."""

    async def test_checkpoints_record_their_parents(self, checkpointer: Checkpointer) -> None:
        stamp = await checkpointer.asave(KEY, save(None, "a", [(0, 1)]))
        stamp = await checkpointer.asave(KEY, save(stamp, "b", [(0, 2)]))
        stamp = await checkpointer.asave(KEY, save(stamp, "c", [(0, 3)]))
        log = [(m.seq, m.message.text()) for m in await checkpointer.alist_messages(KEY)]
        branched = await checkpointer.asave(KEY, save(stamp, "B", [(0, 1), (3, 4)], parent=1))
        stamp = await checkpointer.asave(KEY, save(branched, "", [(0, 1)], parent=0))  # a root
        checkpoints = await checkpointer.alist_checkpoints(KEY)
        assert [(c.version, c.parent_version) for c in checkpoints] == [
            (5, None),
            (4, 1),
            (3, 2),
            (2, 1),
            (1, None),
        ]
        found = await checkpointer.aget_checkpoint(KEY, 4)
        assert found is not None and found == checkpoints[1]
        assert (found.values, found.window, found.log_length) == ({"by": "B"}, [(0, 1), (3, 4)], 4)
        assert await checkpointer.aget_checkpoint(KEY, 9) is None
        assert await checkpointer.aget_checkpoint(ThreadKey("none", "alice"), 1) is None
        after = [(m.seq, m.message.text()) for m in await checkpointer.alist_messages(KEY)]
        assert after == [*log, (3, "B")]  # the branch appended; nothing was rewritten
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.stamp == stamp
        assert [m.text() for m in stored.context] == ["a"]

    async def test_a_parent_that_is_not_an_earlier_checkpoint_is_refused(
        self, checkpointer: Checkpointer
    ) -> None:
        stamp = await checkpointer.asave(KEY, save(None, "a", [(0, 1)]))
        stamp = await checkpointer.asave(KEY, save(stamp, "b", [(0, 2)]))
        for parent in (3, 7, -1):
            with pytest.raises(StateError, match="parent_version"):
                await checkpointer.asave(KEY, save(stamp, "c", [(0, 3)], parent=parent))
        assert await checkpointer.aversion(KEY) == stamp
        assert len(await checkpointer.alist_messages(KEY)) == 2
        same = await checkpointer.asave(KEY, save(stamp, "c", [(0, 3)], parent=2))  # linear
        assert (await checkpointer.alist_checkpoints(KEY, limit=1))[0].parent_version == 2
        assert same.version == 3

    async def test_parents_survive_a_long_history(self, checkpointer: Checkpointer) -> None:
        stamp: ThreadStamp | None = None
        for n in range(40):
            parent = 3 if n == 30 else None
            stamp = await checkpointer.asave(KEY, save(stamp, f"m{n}", [(0, n + 1)], parent))
        parents = {c.version: c.parent_version for c in await checkpointer.alist_checkpoints(KEY)}
        assert parents == {v: 3 if v == 31 else (v - 1 or None) for v in range(1, 41)}
        for version in (1, 3, 17, 31, 40):
            found = await checkpointer.aget_checkpoint(KEY, version)
            assert found is not None and found.version == version
            assert found.parent_version == parents[version]

    async def test_a_rewind_names_the_checkpoint_it_went_back_to(
        self, checkpointer: Checkpointer
    ) -> None:
        stamp: ThreadStamp | None = None
        for n, text in enumerate("abcd"):
            stamp = await checkpointer.asave(KEY, save(stamp, text, [(0, n + 1)]))
        assert stamp is not None
        rewound = await checkpointer.arewind(KEY, stamp, 2)
        assert rewound is not None
        newest = (await checkpointer.alist_checkpoints(KEY, limit=1))[0]
        assert (newest.version, newest.node, newest.parent_version) == (5, "__rollback__", 2)
        after = await checkpointer.asave(KEY, save(rewound, "e", [(0, 3)]))
        newest = (await checkpointer.alist_checkpoints(KEY, limit=1))[0]
        assert (newest.version, newest.parent_version) == (after.version, 5)
