"""Pings on a run's stream: a comment line every ``PING_SECONDS``, from the log's heartbeat."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tenxgraph.errors import ConfigError
from tenxgraph.server import runs
from tenxgraph.server._event_log import EventLog
from tests.server.conftest import Serve
from tests.server.test_runs import AGENT, slow_graph, user_input


def test_a_follower_gets_a_heartbeat_idle_or_busy() -> None:
    async def main() -> None:
        log = EventLog()
        batches: list[list[str]] = []
        beat = asyncio.Event()
        sent = 0

        async def read() -> None:
            async for batch in log.follow(0, heartbeat=0.05):
                batches.append([event.event for event in batch])
                if not batch:
                    beat.set()

        async def two_beats() -> None:
            for _ in range(2):
                beat.clear()
                await beat.wait()

        async def write() -> None:  # busy: never quiet for as long as a beat
            nonlocal sent
            while True:
                log.append("updates", "{}")
                sent += 1
                await asyncio.sleep(0.005)

        reader = asyncio.create_task(read())
        await two_beats()  # idle: the beats come alone
        assert batches == [[], []]
        writer = asyncio.create_task(write())
        await two_beats()  # busy: they still come, between the events
        writer.cancel()
        log.close()
        await reader
        assert [name for batch in batches for name in batch] == ["updates"] * sent

    asyncio.run(asyncio.wait_for(main(), 30))


def test_idle_followers_with_a_short_heartbeat_keep_one_wait_each() -> None:
    """Each beat wakes a follower that waits again: the log must not keep the old waits."""

    async def main() -> tuple[int, int]:
        log = EventLog()
        beats = 0
        enough = asyncio.Event()

        async def read() -> None:
            nonlocal beats
            async for batch in log.follow(0, heartbeat=0.001):
                beats += not batch
                if beats >= 150:
                    enough.set()

        readers = [asyncio.create_task(read()) for _ in range(3)]
        await enough.wait()  # about 50 beats each, no event
        kept = len(log._waiters)
        for reader in readers:  # the clients go
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        return kept, len(log._waiters)

    kept, left = asyncio.run(asyncio.wait_for(main(), 30))
    assert kept <= 3  # one wait per follower at most, not one per beat
    assert left == 0  # a follower that leaves takes its wait with it


def test_a_busy_follower_sets_one_heartbeat_timer_for_all_its_waits() -> None:
    """A follower waits once per batch; one timer for its beat serves the waits, then goes."""

    async def main() -> tuple[int, int, list[asyncio.TimerHandle]]:
        loop = asyncio.get_running_loop()
        timers: list[asyncio.TimerHandle] = []
        call_at = loop.call_at

        def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            timers.append(call_at(when, callback, *args, **kwargs))
            return timers[-1]

        loop.call_at = counted  # type: ignore[method-assign]
        log = EventLog()
        got = 0

        async def read() -> None:
            nonlocal got
            async for batch in log.follow(0, heartbeat=15):
                got += len(batch)

        reader = asyncio.create_task(read())
        waits = 0
        for _ in range(50):
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            waits += len(log._waiters)
            log.append("updates", "{}")
        log.close()
        await reader
        return got, waits, timers

    got, waits, timers = asyncio.run(asyncio.wait_for(main(), 30))
    assert got == 50
    assert waits >= 40  # the follower waited for most events one by one
    assert len(timers) == 1
    assert timers[0].cancelled()  # the follower is done: so is its timer


def test_without_a_heartbeat_a_follower_only_gets_events() -> None:
    async def main() -> list[list[str]]:
        log = EventLog()
        log.append("metadata", "{}")

        async def close_later() -> None:
            await asyncio.sleep(0.1)
            log.close()

        closer = asyncio.create_task(close_later())
        got = [[event.event for event in batch] async for batch in log.follow(0)]
        await closer
        return got

    assert asyncio.run(main()) == [["metadata"]]


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf")])
def test_a_heartbeat_of_no_positive_length_is_refused(seconds: float) -> None:
    async def main() -> None:
        log = EventLog()
        log.append("metadata", "{}")
        log.close()
        batches = 0
        async for _ in log.follow(0, heartbeat=seconds):
            batches += 1
            if batches > 10:  # a beat on every turn, never waiting: what it would be
                break

    with pytest.raises(ConfigError, match="heartbeat must be a number of seconds > 0"):
        asyncio.run(asyncio.wait_for(main(), 30))


def test_a_slow_run_streams_pings_between_its_events(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "PING_SECONDS", 0.1)
    url = serve(slow_graph(0.3, 2))
    body = {"assistant_id": AGENT, "input": user_input("hi"), "stream_mode": ["updates"]}
    with httpx.Client(base_url=url, timeout=30) as client:
        started = time.monotonic()
        answer = client.post("/runs/stream", json=body)
        run_seconds = time.monotonic() - started
    assert answer.status_code == 200
    blocks = [block for block in answer.text.split("\r\n\r\n") if block]
    pings = [block for block in blocks if block.startswith(": ping - ")]
    events = [line[7:] for block in blocks for line in block.splitlines() if line[:7] == "event: "]
    assert len(pings) >= 2  # 0.6 s of run or more, a ping due every 0.1 s
    # and no more than that cadence allows over the run however long it took (a ping
    # source that loops without waiting sends thousands)
    assert len(pings) <= run_seconds / runs.PING_SECONDS + 2
    assert events == ["metadata", "updates", "updates", "end"]
