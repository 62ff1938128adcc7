"""Crons over HTTP: checked before they are stored, searched, changed, deleted, and fired.

The scheduler's clock is moved a day on (``scheduler.clock``) instead of
waiting for a minute to pass: its next look starts the due run.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import httpx
import pytest

from tenxgraph.server.app import create_app
from tenxgraph.server.crons import crons_of
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.testing.server import served
from tests.server.conftest import BACKENDS, Serve, make_graph


def test_crons_are_checked_searched_changed_and_deleted(serve: Serve) -> None:
    with httpx.Client(base_url=serve(), timeout=30) as client:
        thread_id = client.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "agent", "schedule": "0 0 1 1 *", "metadata": {"k": "v"}}
        for bad in (
            {"schedule": "every day"},
            {"schedule": "* * * * *", "timezone": "Nowhere/Else"},
            {"input": {"messages": [{"role": "robot", "content": "x"}]}},
            {"interrupt_before": ["model"]},
            {"metadata": {"k": "a\u0000b"}},
        ):
            assert client.post("/runs/crons", json={**body, **bad}).status_code == 422, bad
        assert client.post("/runs/crons", json={**body, "assistant_id": "other"}).status_code == 404
        assert client.post("/threads/nope/runs/crons", json=body).status_code == 404
        assert client.post("/runs/crons/count", json={}).json() == 0  # none was stored
        made = client.post("/runs/crons", json=body).json()
        on_thread = client.post(f"/threads/{thread_id}/runs/crons", json=body).json()
        assert made["next_run_date"].startswith(f"{dt.datetime.now(dt.UTC).year + 1}-01-01")
        assert on_thread["thread_id"] == thread_id and made["thread_id"] is None
        found = client.post("/runs/crons/search", json={"thread_id": thread_id}).json()
        assert [c["cron_id"] for c in found] == [on_thread["cron_id"]]
        assert client.post("/runs/crons/count", json={"metadata": {"k": "v"}}).json() == 2
        changed = client.patch(f"/runs/crons/{made['cron_id']}", json={"enabled": False}).json()
        assert changed["enabled"] is False and changed["schedule"] == "0 0 1 1 *"
        assert client.post("/runs/crons/count", json={"enabled": True}).json() == 1
        assert (
            client.patch(f"/runs/crons/{made['cron_id']}", json={"schedule": "x"}).status_code
            == 422
        )
        assert client.delete(f"/runs/crons/{made['cron_id']}").status_code == 204
        assert client.delete(f"/runs/crons/{made['cron_id']}").status_code == 404


@pytest.mark.parametrize("backend", BACKENDS)
def test_deleting_a_thread_deletes_its_crons_and_no_others(serve: Serve, backend: str) -> None:
    with httpx.Client(base_url=serve(backend=backend), timeout=30) as client:
        body = {"assistant_id": "agent", "schedule": "0 0 1 1 *"}
        gone, kept, pruned = (client.post("/threads", json={}).json()["thread_id"] for _ in "abc")
        for thread_id in (gone, gone, kept, pruned):
            client.post(f"/threads/{thread_id}/runs/crons", json=body).raise_for_status()
        unbound = client.post("/runs/crons", json=body).json()
        assert client.delete(f"/threads/{gone}").status_code == 204
        prune = client.post("/threads/prune", json={"thread_ids": [pruned]}).json()
        assert prune == {"pruned_count": 1}
        left = client.post("/runs/crons/search", json={}).json()
        assert sorted(c["thread_id"] or "" for c in left) == sorted(["", kept])
        assert unbound["cron_id"] in {c["cron_id"] for c in left}


def test_a_due_tick_runs_on_the_crons_thread(tmp_path: Any) -> None:
    app = create_app(make_graph(SqliteCheckpointer(str(tmp_path / "crons.sqlite"))))
    with served(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        thread_id = client.post("/threads", json={}).json()["thread_id"]
        body = {
            "assistant_id": "agent",
            "schedule": "0 9 * * *",
            "input": {"messages": [{"role": "user", "content": "tick"}]},
        }
        cron = client.post(f"/threads/{thread_id}/runs/crons", json=body).json()
        scheduler = crons_of(app.state.context)
        scheduler.clock = lambda: dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
        runs: list[dict[str, Any]] = []
        for _ in range(300):  # the scheduler looks every second
            runs = client.get(f"/threads/{thread_id}/runs").json()
            if runs and runs[0]["status"] == "success":
                break
            time.sleep(0.1)
        assert [run["metadata"]["cron_id"] for run in runs] == [cron["cron_id"]]
        state = client.get(f"/threads/{thread_id}/state").json()
        assert state["values"]["messages"][-1]["content"] == "echo: tick"
