"""The thread-lease suite's tests: one run holds a thread at a time, and a lost lease fences.

A lease names its holder (``owner``) and expires unless renewed. Taking it
when someone else holds it returns the holder; a waiting run asks the holder
to stop through it; a save or rewind made under a lease is refused
(``ThreadBusyError``) once the lease is someone else's or gone, so a run that
lost its lease writes nothing. ``tenxgraph.testing.thread_leases`` is the
public home of ``ThreadLeasesContract``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError, StateError, ThreadBusyError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite
from tenxgraph.storage.leases import ThreadLeases
from tenxgraph.testing._checkpointer_base import ContractBase
from tenxgraph.testing._checkpointer_rewind import KEY as REWOUND
from tenxgraph.testing._checkpointer_rewind import snapshot as rewound_snapshot
from tenxgraph.testing._checkpointer_rewind import three_turns

__all__ = ["ThreadLeasesContract"]

KEY = ThreadKey("leased", "alice")
LONG = 30.0
"""Seconds of a lease that must not expire during the test."""
SHORT = 0.2
"""Seconds of a lease the test lets expire (it sleeps ``EXPIRED`` after taking it)."""
EXPIRED = 0.5
LOST_A = r"is busy: another run holds it: this run's lease \(run-a\) expired and another run took"
"""What a call made under run-a's lost lease says (it names the lease, for the logs)."""
LOST_B = LOST_A.replace("run-a", "run-b")
HELD_B = r"^thread 'leased' is busy: another run holds it: run run-b; this save, to take it, wrote"
"""What a save that was to take ``KEY``'s lease says when run-b holds it (naming the thread)."""


def turn(stamp: ThreadStamp | None, text: str, log_length: int, lease: str | None) -> ThreadWrite:
    """A write adding one message after ``stamp`` (None: creating), made under ``lease``."""
    return ThreadWrite(
        expected_version=0 if stamp is None else stamp.version,
        new_messages=[Message.text_message(text)],
        values={"by": text},
        window=[(0, log_length + 1)],
        node="n",
        step=log_length,
        expected_incarnation=None if stamp is None else stamp.incarnation,
        lease=lease,
    )


def taking(write: ThreadWrite) -> ThreadWrite:
    """``write`` taking its lease for ``LONG`` seconds in its own transaction."""
    write.take_lease = LONG
    return write


async def snapshot(checkpointer: Checkpointer, key: ThreadKey = KEY) -> tuple[Any, ...]:
    """Everything stored for ``key``, to show a refused write changed nothing."""
    stored = await checkpointer.aload(key)
    assert stored is not None
    log = [(m.seq, m.message.text()) for m in await checkpointer.alist_messages(key)]
    checkpoints = [c.version for c in await checkpointer.alist_checkpoints(key)]
    return stored.stamp, stored.log_length, stored.values, log, checkpoints


class ThreadLeasesContract(ContractBase):
    """Leases: one run holds a thread at a time, and a run that lost it writes nothing.

    The subclass provides ``make_checkpointer``; the suite's ``thread_leases``
    fixture is its ``checkpointer``, which must be a ``ThreadLeases`` too.
    """

    @pytest.fixture
    def thread_leases(self, checkpointer: Checkpointer) -> ThreadLeases:
        """The checkpointer under test as the lease table it also is."""
        if not isinstance(checkpointer, ThreadLeases):
            pytest.fail(
                f"{type(checkpointer).__name__} is not a ThreadLeases: the lease suite runs "
                "against a checkpointer that implements that contract too"
            )
        return checkpointer

    async def test_a_free_lease_is_taken_and_a_second_owner_gets_the_holder(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None  # its own: extended
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"

    async def test_taking_again_extends_the_owners_lease(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        await asyncio.sleep(EXPIRED)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"  # not expired

    async def test_an_expired_lease_is_taken_by_another_run(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        await asyncio.sleep(EXPIRED)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) == "run-b"
        with pytest.raises(ThreadBusyError, match=LOST_A) as raised:
            await thread_leases.arenew_lease(KEY, "run-a", LONG)
        assert (raised.value.expected, raised.value.actual) == (None, None)

    async def test_renewing_reports_the_stop_request_a_waiting_run_made(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.arequest_stop(KEY, "interrupt") == "run-a"
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) == "interrupt"
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) == "interrupt"  # kept
        assert await thread_leases.arequest_stop(KEY, "rollback") == "run-a"
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) == "rollback"

    async def test_renewing_keeps_an_expiring_lease(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) is None
        await asyncio.sleep(EXPIRED)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"

    async def test_an_expired_lease_no_one_took_is_still_its_owners(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        await asyncio.sleep(EXPIRED)
        stamp = await checkpointer.asave(KEY, turn(None, "late but alone", 0, "run-a"))
        assert stamp.version == 1
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"

    async def test_a_released_lease_is_free_and_releasing_anothers_does_nothing(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        await thread_leases.arelease_lease(KEY, "run-b")  # not its lease: nothing happens
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"
        await thread_leases.arelease_lease(KEY, "run-a")
        await thread_leases.arelease_lease(KEY, "run-a")  # twice is fine
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await thread_leases.arenew_lease(KEY, "run-a", LONG)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) == "run-b"

    async def test_renewing_a_lease_never_taken_raises(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await thread_leases.arenew_lease(KEY, "run-a", LONG)
        await thread_leases.arelease_lease(KEY, "run-a")  # nothing to release: nothing happens

    async def test_a_stop_request_needs_a_holder(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.arequest_stop(KEY, "interrupt") is None  # never taken
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        await asyncio.sleep(EXPIRED)
        assert await thread_leases.arequest_stop(KEY, "interrupt") is None  # expired
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None
        await thread_leases.arelease_lease(KEY, "run-b")
        assert await thread_leases.arequest_stop(KEY, "rollback") is None  # released

    async def test_a_stop_request_naming_an_owner_reaches_only_that_holder(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a/1f", LONG) is None
        assert await thread_leases.arequest_stop(KEY, "interrupt", owner_prefix="run-b/") is None
        assert await thread_leases.arenew_lease(KEY, "run-a/1f", LONG) is None  # not marked
        assert await thread_leases.arequest_stop(KEY, "rollback", owner_prefix="run-a/") == (
            "run-a/1f"
        )
        assert await thread_leases.arenew_lease(KEY, "run-a/1f", LONG) == "rollback"
        await thread_leases.arelease_lease(KEY, "run-a/1f")
        assert await thread_leases.arequest_stop(KEY, "interrupt", owner_prefix="run-a/") is None
        assert await thread_leases.atake_lease(KEY, "run-a/2e", SHORT) is None
        await asyncio.sleep(EXPIRED)  # expired: no one to stop, even the named run
        assert await thread_leases.arequest_stop(KEY, "interrupt", owner_prefix="run-a/") is None
        with pytest.raises(StateError, match="stop request"):
            await thread_leases.arequest_stop(KEY, "cancel", owner_prefix="run-a/")

    async def test_taking_the_lease_clears_the_stop_request(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.arequest_stop(KEY, "rollback") == "run-a"
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None  # re-taken: cleared
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.arequest_stop(KEY, "interrupt") == "run-a"
        await thread_leases.arelease_lease(KEY, "run-a")
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None  # new holder: cleared
        assert await thread_leases.arenew_lease(KEY, "run-b", LONG) is None

    async def test_an_unknown_stop_request_is_refused(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        with pytest.raises(StateError, match="stop request"):
            await thread_leases.arequest_stop(KEY, "cancel")
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) is None

    async def test_saves_under_the_held_lease_go_through(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None  # no state yet
        first = await checkpointer.asave(KEY, turn(None, "one", 0, "run-a"))
        second = await checkpointer.asave(KEY, turn(first, "two", 1, "run-a"))
        assert second == (first.incarnation, 2)
        third = await checkpointer.asave(KEY, turn(second, "unfenced", 2, None))  # no lease check
        assert third.version == 3
        stored = await checkpointer.aload(KEY)
        assert stored is not None and [m.text() for m in stored.context] == [
            "one",
            "two",
            "unfenced",
        ]

    async def test_a_save_under_a_lost_lease_writes_nothing(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        stamp = await checkpointer.asave(KEY, turn(None, "a1", 0, "run-a"))
        await asyncio.sleep(EXPIRED)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None  # run-a stalled
        before = await snapshot(checkpointer)
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(KEY, turn(stamp, "a2", 1, "run-a"))
        assert await snapshot(checkpointer) == before
        stored = await checkpointer.aload(KEY)
        assert stored is not None and [m.text() for m in stored.context] == ["a1"]
        assert await checkpointer.asave(KEY, turn(stamp, "b1", 1, "run-b")) == (
            stamp.incarnation,
            2,
        )

    async def test_a_creating_save_under_a_lost_lease_writes_nothing(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        """A new thread's first save is fenced too: once another run took the lease, no thread."""
        assert await thread_leases.atake_lease(KEY, "run-a", SHORT) is None
        await asyncio.sleep(EXPIRED)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None  # run-a stalled
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(KEY, turn(None, "a1", 0, "run-a"))
        assert await checkpointer.aload(KEY) is None
        assert await checkpointer.alist_messages(KEY) == []
        stamp = await checkpointer.asave(KEY, turn(None, "b1", 0, "run-b"))
        assert stamp.version == 1
        # the lost lease is named before the conflict
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(KEY, turn(None, "a1 again", 0, "run-a"))
        with pytest.raises(ConflictError) as raised:  # the right lease, the thread exists
            await checkpointer.asave(KEY, turn(None, "b1 again", 0, "run-b"))
        assert type(raised.value) is ConflictError

    async def test_a_lost_lease_wins_over_a_stale_version(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        """The error says the lease was lost, not that the version moved, when both are true."""
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) is None
        stamp = await checkpointer.asave(KEY, turn(None, "b1", 0, "run-b"))
        await checkpointer.asave(KEY, turn(stamp, "b2", 1, "run-b"))
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(KEY, turn(stamp, "a2", 1, "run-a"))
        with pytest.raises(ConflictError) as raised:  # the right lease, a stale version
            await checkpointer.asave(KEY, turn(stamp, "b2 again", 1, "run-b"))
        assert type(raised.value) is ConflictError

    async def test_a_save_under_a_lease_that_does_not_exist_is_refused(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(KEY, turn(None, "never leased", 0, "run-a"))
        assert await checkpointer.aload(KEY) is None
        assert await checkpointer.alist_messages(KEY) == []
        stamp = await checkpointer.asave(KEY, turn(None, "unfenced", 0, None))
        before = await snapshot(checkpointer)
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        await thread_leases.arelease_lease(KEY, "run-a")
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(KEY, turn(stamp, "after release", 1, "run-a"))
        assert await snapshot(checkpointer) == before

    async def test_leases_are_per_tenant(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        bob = ThreadKey(KEY.thread_id, "bob")
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        assert await thread_leases.atake_lease(bob, "run-b", LONG) is None
        assert await thread_leases.arequest_stop(bob, "interrupt") == "run-b"
        assert await thread_leases.arenew_lease(KEY, "run-a", LONG) is None  # alice's: no request
        with pytest.raises(ThreadBusyError, match=LOST_A):
            await checkpointer.asave(bob, turn(None, "wrong tenant", 0, "run-a"))
        assert await checkpointer.aload(bob) is None
        await checkpointer.asave(bob, turn(None, "bob's", 0, "run-b"))
        await thread_leases.arelease_lease(bob, "run-a")  # alice's owner name on bob's lease
        assert await thread_leases.atake_lease(bob, "run-c", LONG) == "run-b"
        await thread_leases.arelease_lease(KEY, "run-a")
        assert (
            await thread_leases.atake_lease(bob, "run-c", LONG) == "run-b"
        )  # alice's release only
        assert await thread_leases.atake_lease(KEY, "run-c", LONG) is None

    async def test_concurrent_takes_have_one_winner(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        owners = [f"run-{n}" for n in range(8)]
        results = await asyncio.gather(*(thread_leases.atake_lease(KEY, o, LONG) for o in owners))
        winners = [o for o, held in zip(owners, results, strict=True) if held is None]
        assert len(winners) == 1
        assert all(held in (None, winners[0]) for held in results)

    async def test_taking_the_thread_also_reports_its_stamp(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_thread(KEY, "run-a", LONG) == (None, None)  # no thread
        stamp = await checkpointer.asave(KEY, turn(None, "a1", 0, "run-a"))
        assert await thread_leases.atake_thread(KEY, "run-a", LONG) == (None, stamp)
        assert await thread_leases.atake_thread(KEY, "run-b", LONG) == ("run-a", None)

    async def test_a_last_save_gives_the_lease_up_with_it(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        last = turn(None, "a1", 0, "run-a")
        last.release_lease = True
        stamp = await checkpointer.asave(KEY, last)
        assert await thread_leases.atake_thread(KEY, "run-b", LONG) == (None, stamp)

    async def test_a_failed_last_save_keeps_the_lease(
        self,
        checkpointer: Checkpointer,
        thread_leases: ThreadLeases,
    ) -> None:
        assert await thread_leases.atake_lease(KEY, "run-a", LONG) is None
        stamp = await checkpointer.asave(KEY, turn(None, "a1", 0, "run-a"))
        stale = turn(ThreadStamp(stamp.incarnation, stamp.version + 5), "a2", 1, "run-a")
        stale.release_lease = True
        with pytest.raises(ConflictError):
            await checkpointer.asave(KEY, stale)
        assert await thread_leases.atake_lease(KEY, "run-b", LONG) == "run-a"

    async def test_a_rewind_under_a_lost_lease_changes_nothing(
        self, checkpointer: Checkpointer, thread_leases: ThreadLeases
    ) -> None:
        assert await thread_leases.atake_lease(REWOUND, "run-a", 30) is None
        stamp = await three_turns(checkpointer, lease="run-a")
        before = await rewound_snapshot(checkpointer)
        with pytest.raises(ThreadBusyError, match=LOST_B):
            await checkpointer.arewind(REWOUND, stamp, 1, lease="run-b")
        assert await rewound_snapshot(checkpointer) == before
        rewound = await checkpointer.arewind(REWOUND, stamp, 1, lease="run-a")
        assert rewound == (stamp.incarnation, 4)
        await thread_leases.arelease_lease(REWOUND, "run-a")
        before = await rewound_snapshot(checkpointer)
        with pytest.raises(ThreadBusyError, match=LOST_A):  # released: no lease row at all
            await checkpointer.arewind(REWOUND, rewound, 0, lease="run-a")
        assert await rewound_snapshot(checkpointer) == before
        assert await checkpointer.arewind(REWOUND, rewound, 0) is None  # unfenced

    @pytest.fixture
    def takes_with_save(self, thread_leases: ThreadLeases) -> ThreadLeases:
        """The backend, when its saves take leases (``saves_take_leases``); else the test skips."""
        if not thread_leases.saves_take_leases:
            pytest.skip(f"{type(thread_leases).__name__} takes no lease in a save")
        return thread_leases

    async def test_a_save_that_takes_a_free_lease_holds_it(
        self, checkpointer: Checkpointer, takes_with_save: ThreadLeases
    ) -> None:
        stamp = await checkpointer.asave(KEY, taking(turn(None, "a1", 0, "run-a")))
        assert await takes_with_save.atake_lease(KEY, "run-b", LONG) == "run-a"
        again = await checkpointer.asave(KEY, taking(turn(stamp, "a2", 1, "run-a")))  # its own
        assert again == (stamp.incarnation, 2)
        last = taking(turn(again, "a3", 2, "run-a"))
        last.release_lease = True  # taken and given up in one save
        third = await checkpointer.asave(KEY, last)
        assert await takes_with_save.atake_thread(KEY, "run-b", LONG) == (None, third)

    async def test_a_save_that_takes_a_held_lease_writes_and_takes_nothing(
        self, checkpointer: Checkpointer, takes_with_save: ThreadLeases
    ) -> None:
        assert await takes_with_save.atake_lease(KEY, "run-b", LONG) is None
        with pytest.raises(ThreadBusyError, match=HELD_B):  # creating
            await checkpointer.asave(KEY, taking(turn(None, "a1", 0, "run-a")))
        assert await checkpointer.aload(KEY) is None
        stamp = await checkpointer.asave(KEY, turn(None, "b1", 0, "run-b"))
        before = await snapshot(checkpointer)
        with pytest.raises(ThreadBusyError, match=HELD_B):  # updating
            await checkpointer.asave(KEY, taking(turn(stamp, "a2", 1, "run-a")))
        assert await snapshot(checkpointer) == before
        assert await takes_with_save.arenew_lease(KEY, "run-b", LONG) is None  # still run-b's

    async def test_a_save_takes_an_expired_lease(
        self, checkpointer: Checkpointer, takes_with_save: ThreadLeases
    ) -> None:
        assert await takes_with_save.atake_lease(KEY, "run-b", SHORT) is None
        await asyncio.sleep(EXPIRED)
        await checkpointer.asave(KEY, taking(turn(None, "a1", 0, "run-a")))
        assert await takes_with_save.atake_lease(KEY, "run-b", LONG) == "run-a"
        with pytest.raises(ThreadBusyError, match=LOST_B):
            await takes_with_save.arenew_lease(KEY, "run-b", LONG)

    async def test_a_save_that_takes_the_lease_and_conflicts_takes_nothing(
        self, checkpointer: Checkpointer, takes_with_save: ThreadLeases
    ) -> None:
        stamp = await checkpointer.asave(KEY, turn(None, "one", 0, None))
        stale = taking(turn(ThreadStamp(stamp.incarnation, stamp.version + 5), "a2", 1, "run-a"))
        with pytest.raises(ConflictError) as raised:
            await checkpointer.asave(KEY, stale)
        assert type(raised.value) is ConflictError
        assert await takes_with_save.atake_lease(KEY, "run-b", LONG) is None  # still free
