"""Run streams through the real Redis: SSE ids as entry ids, resume from any id, two attempts.

And through a private Redis that is stopped or hung: the writer's own
readers go on, Redis gets every event once it is back, and a follower
elsewhere is told when the run ended and its events did not come.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tenxgraph.errors import EventsLostError
from tenxgraph.server._event_log import EventLogLimits
from tenxgraph.server._redis_events import RedisEvents, RedisStreamReader, RedisStreamWriter
from tests.storage.servers import PrivateRedis

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


async def test_a_stream_expires_from_its_first_batch_and_again_from_its_end(prefix: str) -> None:
    """The expiry goes with a writer's first batch and its last, not with each batch."""
    events = RedisEvents(REDIS_URL, prefix=prefix, ttl_seconds=1000)
    key = events.key("r-ttl")
    try:
        writer = RedisStreamWriter(events, "r-ttl")
        writer.append("metadata", "{}")
        await writer.flushed()
        assert 990 < await events.client.ttl(key) <= 1000  # a worker dying now leaves it to expire
        await events.client.expire(key, 500)  # so a batch that sets it again shows
        writer.append("values", "{}")
        await writer.flushed()
        assert await events.client.ttl(key) <= 500  # a batch in the middle: not set again
        writer.append("end", "null")
        writer.close()
        await writer.flushed()
        assert await events.client.ttl(key) > 990  # the run's end: the whole TTL from now
        assert await events.client.xlen(key) == 3
    finally:
        await events.client.delete(key)
        await events.aclose()


async def test_the_runs_share_a_pipeline_and_a_refused_batch_fails_only_its_own_run(
    prefix: str,
) -> None:
    """Batches added in one turn go in one pipeline; one run's refused ``XADD`` holds its own."""
    events = RedisEvents(REDIS_URL, prefix=prefix)
    keys = [events.key(run) for run in ("r-clash", "r-ok", "r-ok2")]
    pipelines = 0
    make = events.client.pipeline

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal pipelines
        pipelines += 1
        return make(*args, **kwargs)

    try:
        await events.client.xadd(keys[0], {"e": "x", "d": "x"}, id="0-9")  # 0-1 is refused now
        events.client.pipeline = counted
        writers = [RedisStreamWriter(events, run) for run in ("r-clash", "r-ok", "r-ok2")]
        for writer in writers:
            writer.append("values", "{}")
            writer.append("updates", "{}")
            writer.close()
        for writer in writers:
            await asyncio.wait_for(writer.flushed(), 5)
        assert pipelines == 1
        assert [await events.client.xlen(key) for key in keys] == [1, 2, 2]
        local = [e.id async for batch in writers[0].follow(0) for e in batch]
        assert local == [1, 2]  # the refused run's readers here still got its events
    finally:
        await events.client.delete(*keys)
        await events.aclose()


async def test_a_run_that_ended_without_events_ends_its_followers(prefix: str) -> None:
    events = RedisEvents(REDIS_URL, prefix=prefix, settle_seconds=0.3)
    ended = asyncio.Event()

    async def is_ended() -> bool:
        return ended.is_set()

    try:
        reader = RedisStreamReader(events, events.key("never"), ended=is_ended)
        follower = asyncio.create_task(_read(reader, 0))
        await asyncio.sleep(0.1)
        ended.set()
        got = await asyncio.wait_for(follower, 5)
        assert [(n, e) for n, e, _ in got] == [(1, "error"), (2, "end")]
        assert json.loads(got[0][2])["error"] == "EventsUnavailable"
    finally:
        await events.aclose()


async def test_events_written_while_redis_is_down_reach_it_once_it_is_back(
    private_redis: PrivateRedis,
) -> None:
    events = RedisEvents(private_redis.url, prefix="out:", retry_seconds=0.2)
    try:
        private_redis.kill()
        writer = RedisStreamWriter(events, "r")
        for i in range(3):
            writer.append("values", str(i))
        await asyncio.wait_for(writer.flushed(), 5)  # a refused write is not waited on
        writer.append("end", "null")
        writer.close()
        local = [(e.id, e.event) async for batch in writer.follow(0) for e in batch]
        assert local == [(1, "values"), (2, "values"), (3, "values"), (4, "end")]
        private_redis.start()
        reader = RedisStreamReader(events, events.key("r"))
        await reader.prepare()
        got = await asyncio.wait_for(_read(reader, 0), 10)
        assert got == [
            (1, "values", "0"),
            (2, "values", "1"),
            (3, "values", "2"),
            (4, "end", "null"),
        ]
    finally:
        await events.aclose()


async def test_a_follower_of_a_hung_redis_is_told_once_the_run_ended(
    private_redis: PrivateRedis,
) -> None:
    events = RedisEvents(private_redis.url, prefix="hung:", timeout=0.3, settle_seconds=0.5)
    ended = asyncio.Event()

    async def is_ended() -> bool:
        return ended.is_set()

    try:
        writer = RedisStreamWriter(events, "r")
        writer.append("values", "0")
        await writer.flushed()
        private_redis.pause()
        reader = RedisStreamReader(events, events.key("r"), ended=is_ended)
        await asyncio.wait_for(reader.prepare(), 5)
        follower = asyncio.create_task(_read(reader, 0))
        await asyncio.sleep(1.0)
        assert not follower.done()  # the run goes on: the follower waits for Redis
        ended.set()
        got = await asyncio.wait_for(follower, 10)
        assert [(n, e) for n, e, _ in got] == [(1, "error"), (2, "end")]
        assert "Redis does not answer" in json.loads(got[0][2])["message"]
    finally:
        private_redis.resume()
        await events.aclose()
