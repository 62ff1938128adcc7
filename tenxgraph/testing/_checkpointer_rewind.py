"""The rewind part of the checkpointer contract: a thread goes back to a checkpoint.

``arewind`` is the one operation that removes log entries: it cuts the log
back to the checkpoint's length, deletes the later checkpoints and makes the
checkpoint's state the thread's, as a new version, so a writer still holding
a discarded version conflicts. It is compare-and-swap on the stamp; its
lease fence is tested with the other fences, in ``ThreadLeasesContract``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError, StateError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite, Window
from tenxgraph.testing._checkpointer_base import ContractBase, MakeCheckpointer

KEY = ThreadKey("rewound", "alice")
WINDOWS: list[Window] = [[(0, 1)], [(1, 2)], [(0, 3)]]
"""The window of each of the three turns ``three_turns`` saves (the second one trimmed)."""


def turn(
    stamp: ThreadStamp | None,
    text: str,
    window: Window,
    step: int,
    lease: str | None = None,
) -> ThreadWrite:
    """A write adding one message after ``stamp`` (None: creating)."""
    return ThreadWrite(
        expected_version=0 if stamp is None else stamp.version,
        new_messages=[Message.text_message(text)],
        values={"by": text},
        window=window,
        node="n",
        step=step,
        metadata={"topic": "rewind"} if stamp is None else None,
        expected_incarnation=None if stamp is None else stamp.incarnation,
        lease=lease,
    )


async def three_turns(checkpointer: Checkpointer, lease: str | None = None) -> ThreadStamp:
    """Create KEY with messages a, b, c, one per save (versions 1 to 3, steps 10, 20, 30)."""
    stamp: ThreadStamp | None = None
    for index, text in enumerate("abc"):
        stamp = await checkpointer.asave(
            KEY, turn(stamp, text, WINDOWS[index], 10 * (index + 1), lease)
        )
    assert stamp is not None and stamp.version == 3
    return stamp


async def snapshot(checkpointer: Checkpointer) -> tuple[Any, ...]:
    """Everything stored for KEY, to show a refused rewind changed nothing."""
    stored = await checkpointer.aload(KEY)
    assert stored is not None
    log = [(m.seq, m.message.text()) for m in await checkpointer.alist_messages(KEY)]
    checkpoints = [
        (c.version, c.node, c.log_length, c.window)
        for c in await checkpointer.alist_checkpoints(KEY)
    ]
    return stored.stamp, stored.log_length, stored.values, stored.window, log, checkpoints


class RewindContract(ContractBase):
    """Rewind: a thread goes back to a checkpoint, discarding what came after."""

    async def test_a_rewind_returns_the_thread_to_a_checkpoint_as_a_new_version(
        self,
        checkpointer: Checkpointer,
    ) -> None:
        stamp = await three_turns(checkpointer)
        assert await checkpointer.aload(KEY) is not None  # a cache, if any, now holds version 3
        rewound = await checkpointer.arewind(KEY, stamp, 2)
        assert rewound == (stamp.incarnation, 4)
        assert await checkpointer.aversion(KEY) == rewound
        stored = await checkpointer.aload(KEY)
        assert stored is not None
        assert (stored.stamp, stored.log_length) == (rewound, 2)
        assert (stored.values, stored.window) == ({"by": "b"}, [(1, 2)])
        assert [m.text() for m in stored.context] == ["b"]
        assert stored.metadata == {"topic": "rewind"}
        log = await checkpointer.alist_messages(KEY)
        assert [(m.seq, m.message.text()) for m in log] == [(0, "a"), (1, "b")]
        newest, kept, first = await checkpointer.alist_checkpoints(KEY)
        assert (kept.version, first.version) == (2, 1)
        assert (newest.version, newest.node, newest.step) == (4, "__rollback__", 20)
        assert (newest.log_length, newest.values, newest.window) == (2, {"by": "b"}, [(1, 2)])
        assert isinstance(newest.created_at, float) and newest.created_at >= kept.created_at
        (info,) = await checkpointer.alist_threads("alice")
        assert (info.version, info.log_length) == (4, 2)

    async def test_a_rewind_in_a_long_history_keeps_the_checkpoints_before_it(
        self, checkpointer: Checkpointer
    ) -> None:
        stamp: ThreadStamp | None = None
        for n in range(40):
            stamp = await checkpointer.asave(KEY, turn(stamp, f"m{n}", [(0, n + 1)], n))
        assert stamp is not None
        rewound = await checkpointer.arewind(KEY, stamp, 18)
        assert rewound == (stamp.incarnation, 41)
        checkpoints = await checkpointer.alist_checkpoints(KEY)
        assert [c.version for c in checkpoints] == [41, *range(18, 0, -1)]
        assert [(c.values, c.step) for c in checkpoints[1:]] == [
            ({"by": f"m{v - 1}"}, v - 1) for v in range(18, 0, -1)
        ]
        stored = await checkpointer.aload(KEY)
        assert stored is not None and (stored.log_length, stored.window) == (18, [(0, 18)])
        assert await checkpointer.asave(KEY, turn(rewound, "next", [(0, 19)], 99)) == (
            stamp.incarnation,
            42,
        )

    async def test_a_rewind_to_the_first_checkpoint(self, checkpointer: Checkpointer) -> None:
        stamp = await three_turns(checkpointer)
        rewound = await checkpointer.arewind(KEY, stamp, 1)
        assert rewound == (stamp.incarnation, 4)
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.stamp == rewound
        assert (stored.log_length, stored.values, stored.window) == (1, {"by": "a"}, [(0, 1)])
        assert [m.text() for m in stored.context] == ["a"]
        assert [m.message.text() for m in await checkpointer.alist_messages(KEY)] == ["a"]
        assert [c.version for c in await checkpointer.alist_checkpoints(KEY)] == [4, 1]

    async def test_saves_after_a_rewind_append_at_the_cut(self, checkpointer: Checkpointer) -> None:
        stamp = await three_turns(checkpointer)
        rewound = await checkpointer.arewind(KEY, stamp, 1)
        assert rewound is not None
        again = await checkpointer.asave(KEY, turn(rewound, "d", [(0, 2)], 40))
        assert again == (stamp.incarnation, 5)
        again = await checkpointer.asave(KEY, turn(again, "e", [(1, 3)], 50))
        log = await checkpointer.alist_messages(KEY)
        assert [(m.seq, m.message.text()) for m in log] == [(0, "a"), (1, "d"), (2, "e")]
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.stamp == again == (stamp.incarnation, 6)
        assert stored.log_length == 3 and [m.text() for m in stored.context] == ["d", "e"]
        assert [c.version for c in await checkpointer.alist_checkpoints(KEY)] == [6, 5, 4, 1]
        with pytest.raises(ConflictError, match="expected version 3, found 6"):
            await checkpointer.asave(KEY, turn(stamp, "from the discarded turn", [(0, 4)], 40))

    async def test_a_stale_stamp_rewinds_nothing(self, checkpointer: Checkpointer) -> None:
        stamp = await three_turns(checkpointer)
        before = await snapshot(checkpointer)
        with pytest.raises(ConflictError, match="expected version 2, found 3") as raised:
            await checkpointer.arewind(KEY, ThreadStamp(stamp.incarnation, 2), 1)
        assert not raised.value.recreated and type(raised.value) is ConflictError
        with pytest.raises(ConflictError, match="deleted and re-created") as raised:
            await checkpointer.arewind(KEY, ThreadStamp("0123456789abcdef", 3), 1)
        assert raised.value.recreated
        with pytest.raises(ConflictError):
            await checkpointer.arewind(KEY, ThreadStamp(stamp.incarnation, 2), 0)
        assert await snapshot(checkpointer) == before

    async def test_a_rewind_of_a_missing_thread_conflicts(self, checkpointer: Checkpointer) -> None:
        with pytest.raises(ConflictError, match="found None"):
            await checkpointer.arewind(KEY, ThreadStamp("0123456789abcdef", 1), 0)
        assert await checkpointer.aload(KEY) is None

    async def test_a_rewind_to_version_0_deletes_the_thread(
        self, checkpointer: Checkpointer
    ) -> None:
        stamp = await three_turns(checkpointer)
        assert await checkpointer.aload(KEY) is not None
        assert await checkpointer.arewind(KEY, stamp, 0) is None
        assert await checkpointer.aload(KEY) is None
        assert await checkpointer.aversion(KEY) is None
        assert await checkpointer.alist_messages(KEY) == []
        assert await checkpointer.alist_checkpoints(KEY) == []
        assert await checkpointer.alist_threads("alice") == []
        reborn = await checkpointer.asave(KEY, turn(None, "new", [(0, 1)], 1))
        assert reborn.version == 1 and reborn.incarnation != stamp.incarnation
        log = await checkpointer.alist_messages(KEY)
        assert [(m.seq, m.message.text()) for m in log] == [(0, "new")]
        with pytest.raises(ConflictError, match="deleted and re-created"):
            await checkpointer.asave(KEY, turn(stamp, "late", [(0, 4)], 40))

    async def test_a_checkpoint_retention_dropped_cannot_be_rewound_to(
        self,
        make_checkpointer: MakeCheckpointer,
    ) -> None:
        checkpointer = make_checkpointer(keep_checkpoints=1)
        stamp = await three_turns(checkpointer)
        before = await snapshot(checkpointer)
        with pytest.raises(StateError, match=r"'rewound'.*checkpoint 1\b"):
            await checkpointer.arewind(KEY, stamp, 1)
        assert await snapshot(checkpointer) == before
        rewound = await checkpointer.arewind(KEY, stamp, 3)  # the kept one: the same state, anew
        assert rewound == (stamp.incarnation, 4)
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.stamp == rewound
        assert [m.text() for m in stored.context] == ["a", "b", "c"]
        checkpoints = await checkpointer.alist_checkpoints(KEY)
        assert [c.version for c in checkpoints] in ([4], [4, 3])  # retention may keep one more
        assert checkpoints[0].node == "__rollback__"
