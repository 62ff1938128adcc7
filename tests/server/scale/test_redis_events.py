"""Run streams through the real Redis: SSE ids as entry ids, resume from any id, two attempts."""

from __future__ import annotations

import asyncio

import pytest

from tenxgraph.errors import EventsLostError
from tenxgraph.server._event_log import EventLogLimits
from tenxgraph.server._redis_events import RedisEvents, RedisStreamReader, RedisStreamWriter

from .conftest import REDIS_URL

pytestmark = pytest.mark.redis


async def _read(reader: RedisStreamReader, after: int) -> list[tuple[int, str, str]]:
    got = []
    async for batch in reader.follow(after):
        got += [(e.id, e.event, e.data) for e in batch]
    return got


async def test_a_follower_elsewhere_gets_every_event_once_across_two_attempts(prefix: str) -> None:
    events = RedisEvents(REDIS_URL, prefix=prefix)
    try:
        first = RedisStreamWriter(events, "r1")
        for i in range(5):
            first.append("values", f'{{"i": {i}}}')
        await first.flushed()  # the first attempt dies here: no end event
        reader = RedisStreamReader(events, events.key("r1"))
        follower = asyncio.create_task(_read(reader, 2))
        await asyncio.sleep(0.2)
        start = await events.last_event_id("r1")
        assert start == 5
        second = RedisStreamWriter(events, "r1", start_after=start)
        second.append("metadata", '{"attempt": 2}')
        second.append("values", '{"i": 5}')
        second.append("end", "null")
        second.close()
        await second.flushed()
        got = await asyncio.wait_for(follower, 5)
        assert [n for n, _, _ in got] == [3, 4, 5, 6, 7, 8]
        assert got[3][1:] == ("metadata", '{"attempt": 2}') and got[-1][1] == "end"
        # the second attempt's own readers get the first attempt's events from Redis
        local = [(e.id, e.event) async for batch in second.follow(0) for e in batch]
        assert [n for n, _ in local] == list(range(1, 9))
    finally:
        await events.aclose()


async def test_a_resume_before_the_oldest_kept_event_is_refused(prefix: str) -> None:
    events = RedisEvents(REDIS_URL, prefix=prefix)
    try:
        writer = RedisStreamWriter(events, "r2", EventLogLimits(max_events=10))
        for i in range(300):  # MAXLEN ~ trims whole nodes: far past the bound
            writer.append("values", str(i))
        writer.append("end", "null")
        writer.close()
        await writer.flushed()
        reader = RedisStreamReader(events, events.key("r2"))
        await reader.prepare()
        assert 1 < reader.first_kept <= 301 - 10
        with pytest.raises(EventsLostError):
            reader.check_resume(0)
        tail = await _read(reader, 300)
        assert tail == [(301, "end", "null")]
    finally:
        await events.aclose()


async def test_a_run_that_ended_without_events_ends_its_followers(prefix: str) -> None:
    events = RedisEvents(REDIS_URL, prefix=prefix)
    ended = asyncio.Event()

    async def is_ended() -> bool:
        return ended.is_set()

    try:
        reader = RedisStreamReader(events, events.key("never"), ended=is_ended)
        follower = asyncio.create_task(_read(reader, 0))
        await asyncio.sleep(0.1)
        ended.set()
        assert await asyncio.wait_for(follower, 5) == []
    finally:
        await events.aclose()
