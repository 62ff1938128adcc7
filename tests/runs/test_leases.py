"""A run's lease on its own clock: the heartbeat's beats, the strategies' waits, the releases.

The lease's timing is its contract: a dead run blocks its thread for at most
``lease_seconds`` only if the heartbeat renews every third of it (at most a
second apart), and a waiting run's polls and ``busy_timeout`` bound how long a
caller waits. These tests run on an event loop whose clock moves only when the
loop would sleep, straight to its next timer: every beat and poll lands at an
exact instant, in no real time, whatever the machine's load.

The leases are ``InMemoryCheckpointer``'s, with each call recorded and, where a
test says so, answered from a script (a holder that never lets go, a storage
failure). ``tests/core/graph/test_one_run_per_thread.py`` runs the same
strategies through whole graphs on every backend.
"""

from __future__ import annotations

import asyncio
import logging
import selectors
from collections.abc import Coroutine
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.errors import ConfigError, StorageError, ThreadBusyError
from tenxgraph.runs import LeasePolicy, ThreadLease, _turns
from tenxgraph.runs._leases import lease_owner, lease_table, missing_leases, take_thread
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.storage.checkpointer.base import ThreadStamp
from tests.storage.test_threads_without_leases import ThreadsOnly

KEY = ThreadKey("leased")
OWNER = "run-1/abcd1234"
STAMP = ThreadStamp("incarnation", 3)
"""What a scripted take reports for the thread (no store has this stamp)."""


def run_on_virtual_clock(main: Coroutine[Any, Any, Any]) -> Any:
    """Run ``main`` on a loop whose clock jumps to the next timer instead of sleeping.

    A loop with nothing ready and no timer would wait forever, and one that turns
    10,000 times is spinning (timers ever closer, say): both raise here.
    """
    now = [0.0]
    turns = [0]

    class Selector(selectors.DefaultSelector):
        def select(self, timeout: float | None = None) -> list[Any]:
            turns[0] += 1
            if turns[0] > 10_000:
                raise RuntimeError("the loop turned 10,000 times: a wait that never ends")
            ready = super().select(0)
            if not ready and timeout is None:
                raise RuntimeError("the loop would wait forever: nothing is scheduled")
            if not ready and timeout:
                now[0] += timeout
            return ready

    loop = asyncio.SelectorEventLoop(Selector())
    loop.time = lambda: now[0]  # type: ignore[method-assign]
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()


def clock() -> float:
    return asyncio.get_running_loop().time()


class Leases(InMemoryCheckpointer):
    """``InMemoryCheckpointer`` recording its lease calls; renewals answer from ``answers``."""

    def __init__(self, *answers: str | BaseException | None) -> None:
        super().__init__()
        self.answers = list(answers)
        """What the next renewals return (a string or None) or raise; then the store answers."""
        self.renewals: list[tuple[float, ThreadKey, str, float]] = []
        self.releases: list[tuple[ThreadKey, str]] = []
        self.release_error: BaseException | None = None
        self.stops: list[tuple[float, ThreadKey, str]] = []
        self.stamps: dict[ThreadKey, ThreadStamp] = {}
        """What ``aversion`` reports for these threads (the store's own stamp for others)."""

    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        return self.stamps.get(key) or await super().aversion(key)

    async def arenew_lease(self, key: ThreadKey, owner: str, seconds: float) -> str | None:
        self.renewals.append((clock(), key, owner, seconds))
        if not self.answers:
            return await super().arenew_lease(key, owner, seconds)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        self.releases.append((key, owner))
        if self.release_error is not None:
            raise self.release_error
        await super().arelease_lease(key, owner)

    async def arequest_stop(
        self, key: ThreadKey, request: str, *, owner_prefix: str | None = None
    ) -> str | None:
        self.stops.append((clock(), key, request))
        return await super().arequest_stop(key, request, owner_prefix=owner_prefix)


class Holders:
    """A scripted ``take``: the holders it reports in turn (then the thread is free)."""

    def __init__(self, *holders: str, forever: str | None = None) -> None:
        self.holders = list(holders)
        self.forever = forever
        """Reported once ``holders`` run out: a holder that never lets go."""
        self.calls: list[tuple[float, ThreadKey, str, float]] = []

    async def __call__(
        self, key: ThreadKey, owner: str, seconds: float
    ) -> tuple[str | None, ThreadStamp | None]:
        self.calls.append((clock(), key, owner, seconds))
        holder = self.holders.pop(0) if self.holders else self.forever
        return holder, (None if holder is not None else STAMP)

    @property
    def times(self) -> list[float]:
        return [call[0] for call in self.calls]


async def beat_for(lease: ThreadLease, seconds: float) -> None:
    """Run ``lease``'s heartbeat for ``seconds`` of the loop's clock, then stop it."""
    lease.start_heartbeat()
    await asyncio.sleep(seconds)
    await lease.stop_heartbeat()


def test_a_lease_made_holds_nothing_yet() -> None:
    lease = ThreadLease(Leases(), KEY, OWNER, 30.0)
    assert (lease.stamp, lease.pending, lease.requested, lease.on_stop) == (None,) * 4
    assert (lease.released, lease.kept) == (False, False)


def test_a_checkpointer_without_leases_is_refused_naming_what_it_lacks() -> None:
    store = Leases()
    assert missing_leases(store) is None
    assert lease_table(store) is store
    without = ThreadsOnly(store)
    with pytest.raises(ConfigError) as raised:
        lease_table(without)
    assert str(raised.value) == missing_leases(without)
    for part in (
        "the checkpointer ThreadsOnly does not implement ThreadLeases",
        "(tenxgraph.storage.ThreadLeases: atake_lease, arenew_lease, arelease_lease, "
        "arequest_stop, aversion), and a graph's runs hold their thread through its leases;",
        "(tenxgraph.testing.ThreadLeasesContract checks it), or use the graph without a "
        "checkpointer",
    ):
        assert part in str(raised.value)


# --- the heartbeat


@pytest.mark.parametrize(("seconds", "interval"), [(30.0, 1.0), (3.0, 1.0), (1.5, 0.5)])
def test_the_heartbeat_renews_every_third_of_the_lease_at_most_a_second_apart(
    seconds: float, interval: float
) -> None:
    store = Leases(None, None, None, None)
    lease = ThreadLease(store, KEY, OWNER, seconds)
    run_on_virtual_clock(beat_for(lease, 3.5 * interval))
    beats = [at for at, *_ in store.renewals]
    assert beats == pytest.approx([interval, 2 * interval, 3 * interval])
    assert {tuple(call[1:]) for call in store.renewals} == {(KEY, OWNER, seconds)}


@pytest.mark.parametrize(
    ("stopped_at", "renewals"),
    [(2.5, 2), (0.9, 0)],  # after two beats; before the first (most runs end so)
)
def test_a_stopped_heartbeat_renews_no_more(stopped_at: float, renewals: int) -> None:
    store = Leases(*[None] * 10)
    lease = ThreadLease(store, KEY, OWNER, 30.0)

    async def main() -> None:
        await beat_for(lease, stopped_at)
        await asyncio.sleep(5)

    run_on_virtual_clock(main())
    assert len(store.renewals) == renewals


@pytest.mark.parametrize(
    ("answer", "heard", "renewals"),
    [
        ("interrupt", "interrupt", 4),  # the run stops at its next step; the beats go on
        (ThreadBusyError(KEY.thread_id, "taken by another run"), "lost", 2),  # and end
    ],
)
def test_what_a_renewal_brings_reaches_the_run_once(
    answer: str | BaseException, heard: str, renewals: int
) -> None:
    store = Leases(None, answer, None, None)
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    told: list[tuple[float, str]] = []
    lease.on_stop = lambda request: told.append((clock(), request))
    run_on_virtual_clock(beat_for(lease, 4.5))
    assert told == [(pytest.approx(2.0), heard)]
    assert len(store.renewals) == renewals


def test_a_request_without_a_listener_changes_nothing() -> None:
    store = Leases("rollback", None, None)
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    run_on_virtual_clock(beat_for(lease, 3.5))
    assert len(store.renewals) == 3


def test_a_failing_renewal_is_logged_and_the_heartbeat_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any error of a backend's, not only the library's: the next save reports a real failure."""
    store = Leases(RuntimeError("connection reset"), StorageError("timed out"), None)
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    heard: list[str] = []
    lease.on_stop = heard.append
    with caplog.at_level(logging.WARNING, logger="tenxgraph.runs"):
        run_on_virtual_clock(beat_for(lease, 3.5))
    assert heard == []
    assert [at for at, *_ in store.renewals] == pytest.approx([1.0, 2.0, 3.0])
    warnings = [record.getMessage() for record in caplog.records]
    assert warnings == [
        "lease of thread 'leased' not renewed: connection reset",
        "lease of thread 'leased' not renewed: timed out",
    ]


# --- waiting for a held thread


def test_enqueue_polls_twice_as_late_each_time_up_to_a_quarter_second() -> None:
    store = Leases()
    take = Holders(*["other/1"] * 7)
    policy = LeasePolicy(lease_seconds=12.0, strategy="enqueue")
    lease = run_on_virtual_clock(take_thread(store, KEY, "run-1", policy, take=take))
    assert take.times == pytest.approx([0, 0.01, 0.03, 0.07, 0.15, 0.31, 0.56, 0.81])
    assert {call[1:] for call in take.calls} == {(KEY, lease.owner, 12.0)}
    assert lease.stamp == STAMP
    assert store.stops == []


def test_a_wait_ends_at_busy_timeout_naming_the_last_holder() -> None:
    store = Leases()
    take = Holders("first/1", forever="second/2")
    policy = LeasePolicy(strategy="enqueue", busy_timeout=0.5)

    async def main() -> float:
        with pytest.raises(ThreadBusyError) as raised:
            await take_thread(store, KEY, "run-1", policy, take=take)
        assert raised.value.thread_id == "leased"
        assert str(raised.value).endswith(
            ": run second/2 still held it after a wait of 0.5 s (busy_timeout)"
        )
        return clock()

    ended = run_on_virtual_clock(main())
    assert ended == pytest.approx(0.5)
    assert take.times[:7] == pytest.approx([0, 0.01, 0.03, 0.07, 0.15, 0.31, 0.5])
    assert max(take.times) == pytest.approx(0.5)


def test_a_wait_of_no_time_takes_once() -> None:
    take = Holders(forever="other/1")
    policy = LeasePolicy(strategy="enqueue", busy_timeout=0)
    with pytest.raises(ThreadBusyError, match="after a wait of 0 s"):
        run_on_virtual_clock(take_thread(Leases(), KEY, "run-1", policy, take=take))
    assert take.times == [0]


def test_reject_refuses_at_once_naming_the_holder() -> None:
    store = Leases()
    take = Holders(forever="other/1")
    with pytest.raises(ThreadBusyError) as raised:
        run_on_virtual_clock(take_thread(store, KEY, "run-1", LeasePolicy(), take=take))
    assert raised.value.thread_id == "leased"
    assert str(raised.value) == (
        "thread 'leased' is busy: another run holds it: run other/1 holds it; pass "
        "multitask_strategy 'enqueue' in the config to wait for it, or 'interrupt' or "
        "'rollback' to stop it"
    )
    assert len(take.calls) == 1
    assert store.stops == []


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_interrupt_and_rollback_ask_the_holder_to_stop_once_then_wait(strategy: str) -> None:
    store = Leases()
    take = Holders("other/1", "other/1")
    policy = LeasePolicy(strategy=strategy)  # type: ignore[arg-type]
    run_on_virtual_clock(take_thread(store, KEY, "run-1", policy, take=take))
    assert store.stops == [(0, KEY, strategy)]
    assert take.times == pytest.approx([0, 0.01, 0.03])


def test_a_free_thread_is_taken_at_once_with_its_stamp() -> None:
    store = Leases()
    take = Holders()
    lease = run_on_virtual_clock(take_thread(store, KEY, "run-7", LeasePolicy(), take=take))
    assert take.times == [0]
    assert lease.owner.startswith("run-7/")
    assert (lease.stamp, lease.kept, lease.released) == (STAMP, False, False)


# --- rollback of a holder that died


AFTER = ThreadStamp("incarnation", 1)
"""The stamp the store reports after a discard rewound the thread."""


@pytest.mark.parametrize(("discarded", "stamp"), [(True, AFTER), (False, STAMP)])
def test_rollback_discards_a_dead_holders_turn_and_reads_the_thread_again(
    monkeypatch: pytest.MonkeyPatch, discarded: bool, stamp: ThreadStamp
) -> None:
    """After a discard the stamp is the store's, else the one the take read."""
    store = Leases()
    store.stamps[KEY] = AFTER
    calls: list[tuple[Any, ...]] = []

    async def discard(*args: Any) -> bool:
        calls.append(args)
        return discarded

    monkeypatch.setattr(_turns, "discard_unfinished", discard)
    policy = LeasePolicy(strategy="rollback")
    take = Holders("dead/1")
    lease = run_on_virtual_clock(take_thread(store, KEY, "run-1", policy, take=take))
    assert calls == [(store, KEY, lease.owner, _turns.DIED)]
    assert lease.stamp == stamp
    assert store.releases == []


def test_a_failed_discard_gives_the_lease_up(monkeypatch: pytest.MonkeyPatch) -> None:
    store = Leases()

    async def discard(*args: Any) -> bool:
        raise StorageError("the disk is full")

    monkeypatch.setattr(_turns, "discard_unfinished", discard)
    take = Holders("dead/1")
    with pytest.raises(StorageError, match="disk is full"):
        run_on_virtual_clock(
            take_thread(store, KEY, "run-1", LeasePolicy(strategy="rollback"), take=take)
        )
    assert [owner for _, owner in store.releases] == [take.calls[0][2]]


def test_other_strategies_discard_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    async def discard(*args: Any) -> bool:
        raise AssertionError("discarded under enqueue")

    monkeypatch.setattr(_turns, "discard_unfinished", discard)
    policy = LeasePolicy(strategy="enqueue")
    lease = run_on_virtual_clock(take_thread(Leases(), KEY, "run-1", policy, take=Holders("a/1")))
    assert lease.stamp == STAMP


# --- a lease the caller keeps


def test_a_kept_lease_read_with_its_stamp_costs_no_call() -> None:
    store = Leases()
    lease = run_on_virtual_clock(
        take_thread(store, KEY, "run-1", LeasePolicy(), owner=OWNER, stamp=STAMP)
    )
    assert (lease.owner, lease.kept, lease.stamp, lease.requested) == (OWNER, True, STAMP, None)
    assert store.renewals == []


def test_a_kept_lease_is_renewed_not_taken_and_brings_its_stop_request() -> None:
    store = Leases("interrupt")
    policy = LeasePolicy(lease_seconds=9.0)
    lease = run_on_virtual_clock(take_thread(store, KEY, "run-1", policy, owner=OWNER))
    assert [call[1:] for call in store.renewals] == [(KEY, OWNER, 9.0)]
    assert (lease.kept, lease.requested, lease.stamp) == (True, "interrupt", None)


# --- a deferred lease, taken by the first save or by take_pending


def deferred(store: Leases, strategy: str = "reject") -> ThreadLease:
    policy = LeasePolicy(lease_seconds=7.0, strategy=strategy)  # type: ignore[arg-type]
    return ThreadLease.deferred(store, KEY, "run-3", policy, STAMP)


def test_a_deferred_lease_waits_for_its_take() -> None:
    lease = deferred(Leases(), "enqueue")
    assert lease.owner.startswith("run-3/")
    assert (lease.pending, lease.stamp, lease.seconds) == (
        LeasePolicy(lease_seconds=7.0, strategy="enqueue"),
        STAMP,
        7.0,
    )


def test_take_pending_takes_with_the_policy_once() -> None:
    lease = deferred(Leases(), "enqueue")
    lease.taker = take = Holders("other/1")
    run_on_virtual_clock(lease.take_pending())
    assert take.times == pytest.approx([0, 0.01])
    assert {call[3] for call in take.calls} == {7.0}
    assert (lease.pending, lease.released, lease.stamp) == (None, False, STAMP)
    run_on_virtual_clock(lease.take_pending())  # taken: nothing more
    assert len(take.calls) == 2


def test_a_refused_pending_take_holds_nothing() -> None:
    lease = deferred(Leases())
    lease.taker = Holders(forever="other/1")
    with pytest.raises(ThreadBusyError):
        run_on_virtual_clock(lease.take_pending())
    assert (lease.pending, lease.released) == (None, True)


# --- giving the lease up


def test_release_with_gives_the_owner_to_the_callers_statement() -> None:
    store = Leases(*[None] * 5)
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    seen: list[tuple[str | None, bool]] = []

    async def give_up(owner: str | None) -> bool:
        seen.append((owner, lease.released))  # released while the statement goes
        return True

    async def main() -> None:
        lease.start_heartbeat()
        await asyncio.sleep(1.5)
        await lease.release_with(give_up)
        await asyncio.sleep(5)

    run_on_virtual_clock(main())
    assert seen == [(OWNER, True)]
    assert lease.released
    assert store.releases == []
    assert len(store.renewals) == 1  # the heartbeat stopped first


def test_release_with_a_statement_that_did_not_run_releases_alone() -> None:
    store = Leases()
    lease = ThreadLease(store, KEY, OWNER, 30.0)

    async def did_not_run(owner: str | None) -> bool:
        return False

    run_on_virtual_clock(lease.release_with(did_not_run))
    assert store.releases == [(KEY, OWNER)]
    assert lease.released


@pytest.mark.parametrize("kept", [True, False])
def test_release_with_has_nothing_to_drop_for_a_kept_or_released_lease(kept: bool) -> None:
    store = Leases()
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    lease.kept, lease.released = kept, not kept
    owners: list[str | None] = []

    async def give_up(owner: str | None) -> bool:
        owners.append(owner)
        return False

    run_on_virtual_clock(lease.release_with(give_up))
    assert owners == [None]
    assert store.releases == []
    assert lease.released is not kept


def test_release_gives_the_lease_up_once() -> None:
    store = Leases()
    lease = ThreadLease(store, KEY, OWNER, 30.0)

    async def main() -> None:
        await lease.release()
        await lease.release()

    run_on_virtual_clock(main())
    assert store.releases == [(KEY, OWNER)]
    assert lease.released


def test_a_kept_lease_is_left_held() -> None:
    store = Leases()
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    lease.kept = True
    run_on_virtual_clock(lease.release())
    assert store.releases == []
    assert not lease.released


def test_a_failed_release_only_waits_for_the_expiry(caplog: pytest.LogCaptureFixture) -> None:
    store = Leases()
    store.release_error = StorageError("connection lost")
    lease = ThreadLease(store, KEY, OWNER, 12.5)
    with caplog.at_level(logging.WARNING, logger="tenxgraph.runs"):
        run_on_virtual_clock(lease.release())
    assert lease.released
    assert [record.getMessage() for record in caplog.records] == [
        "lease of thread 'leased' not released (it expires in 12.5 s): connection lost"
    ]


def test_an_error_of_another_kind_from_a_release_is_raised() -> None:
    store = Leases()
    store.release_error = RuntimeError("a bug in the backend")
    lease = ThreadLease(store, KEY, OWNER, 30.0)
    with pytest.raises(RuntimeError, match="a bug in the backend"):
        run_on_virtual_clock(lease.release())


# --- owners


def test_an_owner_names_its_run_and_is_new_each_time() -> None:
    owners = {lease_owner("run-9") for _ in range(50)}
    assert len(owners) == 50
    for owner in owners:
        run_id, _, suffix = owner.partition("/")
        assert run_id == "run-9"
        assert len(suffix) == 8
        int(suffix, 16)
