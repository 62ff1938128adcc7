"""A cron on two workers over one Postgres schema: its tick is one run, claimed by a worker.

Both workers' schedulers look at the same cron; their clocks are moved a
day on (``scheduler.clock``) rather than waiting for the schedule.
"""

from __future__ import annotations

import datetime as dt
import time
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tenxgraph.server.crons import crons_of
from tenxgraph.testing.server import served

from .test_two_workers import AGENT, worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _runs(client: httpx.Client, thread_id: str) -> list[dict[str, Any]]:
    for _ in range(300):
        runs: list[dict[str, Any]] = client.get(f"/threads/{thread_id}/runs").json()
        if runs and all(run["status"] == "success" for run in runs):
            return runs
        time.sleep(0.1)
    raise AssertionError(f"no finished run from the cron: {runs}")


def test_a_tick_is_one_run_across_two_workers(schema: str, prefix: str) -> None:
    apps = [worker(schema, prefix, delay=0.01, steps=2) for _ in range(2)]
    with ExitStack() as stack:
        a, b = (stack.enter_context(served(app)) for app in apps)
        with (
            httpx.Client(base_url=a, timeout=30) as on_a,
            httpx.Client(base_url=b, timeout=30) as on_b,
        ):
            thread_id = on_a.post("/threads", json={}).json()["thread_id"]
            message = {"role": "user", "content": "tick"}
            body = {
                "assistant_id": AGENT,
                "schedule": "30 6 * * *",
                "input": {"messages": [message]},
            }
            cron = on_a.post(f"/threads/{thread_id}/runs/crons", json=body).json()
            assert on_b.post("/runs/crons/count", json={"thread_id": thread_id}).json() == 1
            later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
            for app in apps:
                crons_of(app.state.context).clock = lambda: later
            runs = _runs(on_b, thread_id)
            assert [run["metadata"]["cron_id"] for run in runs] == [cron["cron_id"]]
            found = on_b.post("/runs/crons/search", json={"thread_id": thread_id}).json()
            assert dt.datetime.fromisoformat(found[0]["next_run_date"]) > later
            texts = [
                m["content"]
                for m in on_a.get(f"/threads/{thread_id}/state").json()["values"]["messages"]
            ]
            assert texts[0] == "tick" and len(texts) == 3
