"""Redis stopped or hung under two real ``tenxgraph serve --postgres --redis`` workers.

The workers' Redis (run streams and thread cache) is a private one the test
stops (killed, later started again on its port) or hangs (SIGSTOP, later
SIGCONT) while background runs are created and followed through both
workers. Checked: every run is created, runs and ends ``success``, and
``/ready`` stays 200 (runs go on: no balancer should drop the workers); every
follower opened during the outage is answered 200 and its stream ends
with ``end`` (the events, or an ``EventsUnavailable`` error first), none
hangs (nor does the official ``langgraph-sdk`` client's ``join_stream``);
once Redis is back, each run's stream reads the same on both
workers, every event once and in order, ending with ``end``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.test_stream_resume import sse
from tests.storage.servers import PrivateRedis

from .cluster import Cluster
from .test_kill_worker import _wait_all

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]
RUNS = 6
OUTAGE_SECONDS = 6.0


class Follower(threading.Thread):
    """Reads one run's stream from one worker: its status and events (id, name, data)."""

    def __init__(self, url: str, path: str) -> None:
        super().__init__(daemon=True)
        self.url, self.path = url, path
        self.status = 0
        self.events: list[tuple[str, str, Any]] = []
        self.failure = ""

    def run(self) -> None:
        try:
            with httpx.stream("GET", self.url + self.path, timeout=90) as response:
                self.status = response.status_code
                if self.status == 200:
                    for event in sse(response):
                        self.events.append((event.get("id", ""), event["event"], event["data"]))
        except httpx.HTTPError as exc:
            self.failure = repr(exc)


class SdkFollower(Follower):
    """The same through the official ``langgraph-sdk`` client (``runs.join_stream``)."""

    def run(self) -> None:
        from langgraph_sdk import get_sync_client

        _, thread, _, run_id, _ = self.path.split("/", 5)[1:]
        client = get_sync_client(url=self.url, api_key=None, timeout=90)
        try:
            for part in client.runs.join_stream(thread, run_id):
                self.events.append((part.id or "", part.event, part.data))
            self.status = 200
        except Exception as exc:  # any failure of the client is a finding
            self.failure = repr(exc)
        finally:
            client.close()


def _create_runs(urls: list[str], tag: str) -> list[tuple[str, str]]:
    """Background runs ``job-K``, round robin over the workers: (thread, run id)."""
    started = []
    for k in range(RUNS):
        thread = f"{tag}-{k}"
        body = {
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": f"job-{k}"}]},
            "if_not_exists": "create",
            "stream_mode": ["values", "updates"],
        }
        answer = httpx.post(f"{urls[k % 2]}/threads/{thread}/runs", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        started.append((thread, answer.json()["run_id"]))
    return started


def _follow_all(
    urls: list[str], started: list[tuple[str, str]], *, sdk: bool = False
) -> list[Follower]:
    kinds: list[type[Follower]] = [Follower, SdkFollower] if sdk else [Follower]
    followers = [
        kind(url, f"/threads/{thread}/runs/{run_id}/stream")
        for thread, run_id in started
        for url in urls
        for kind in kinds
    ]
    for follower in followers:
        follower.start()
    return followers


def _joined(followers: list[Follower]) -> list[Follower]:
    for follower in followers:
        follower.join(120)
    assert not [f.path for f in followers if f.is_alive()], "followers left hanging"
    return followers


@pytest.mark.parametrize("fault", ["stopped", "hung"])
def test_runs_created_while_redis_is_out_finish_and_every_stream_ends(
    tmp_path: Path, private_redis: PrivateRedis, fault: str
) -> None:
    with Cluster(tmp_path, redis_url=private_redis.url) as cluster:
        urls = cluster.start(2)
        if fault == "stopped":
            private_redis.kill()
        else:
            private_redis.pause()
        out_at = time.monotonic()
        started = _create_runs(urls, cluster.tag)
        during = _follow_all(urls, started, sdk=True)
        ready = [httpx.get(f"{url}/ready", timeout=30).status_code for url in urls]
        time.sleep(max(0.0, out_at + OUTAGE_SECONDS - time.monotonic()))
        if fault == "stopped":
            private_redis.start()
        else:
            private_redis.resume()
        statuses = _wait_all(urls[0], [(urls[0], t, r) for t, r in started])
        _joined(during)
        after = _joined(_follow_all(urls, started))

    problems = _problems(statuses, during, after)
    problems += [f"/ready answered {code} while Redis was out" for code in ready if code != 200]
    assert problems == [], "\n".join(problems)


def _problems(statuses: dict[str, str], during: list[Follower], after: list[Follower]) -> list[str]:
    """Each symptom apart, so a failure shows all of them."""
    problems = [f"run {r} ended {s}" for r, s in statuses.items() if s != "success"]
    for follower in during:  # answered, and told how it ends: never a 500, never left open
        names = [name for _, name, _ in follower.events]
        errors = [data["error"] for _, name, data in follower.events if name == "error"]
        if (follower.status, follower.failure) != (200, ""):
            problems.append(f"during: {follower.path}: {follower.status} {follower.failure}")
        elif not names or names[-1] != "end" or set(errors) - {"EventsUnavailable"}:
            problems.append(f"during: {follower.path}: {names} {errors}")
    streams: dict[str, list[list[tuple[str, str, Any]]]] = {}
    for follower in after:  # Redis is back: the whole stream, on either worker
        streams.setdefault(follower.path, []).append(follower.events)
        ids = [int(number) for number, _, _ in follower.events]
        names = [name for _, name, _ in follower.events]
        if (
            follower.status != 200
            or ids != list(range(1, len(ids) + 1))
            or names[:1] != ["metadata"]
            or names[-1:] != ["end"]
            or "error" in names
            or names.count("values") < 2
        ):
            problems.append(f"after: {follower.url}{follower.path}: {follower.status} {names}")
    problems += [f"after: {p}: the workers differ" for p, (a, b) in streams.items() if a != b]
    return problems
