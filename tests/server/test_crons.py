"""Crons: none can be made (no durable scheduler yet), and the routes say so truthfully."""

from __future__ import annotations

import httpx

from tests.server.conftest import Serve


def test_crons_are_refused_and_none_are_found(serve: Serve) -> None:
    with httpx.Client(base_url=serve(), timeout=30) as client:
        thread_id = client.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "agent", "schedule": "0 0 1 1 *"}
        for path in ("/runs/crons", f"/threads/{thread_id}/runs/crons"):
            answer = client.post(path, json=body)
            assert answer.status_code == 422, answer.text
            assert "system's scheduler" in answer.json()["detail"]
        assert client.post("/runs/crons/search", json={"assistant_id": "agent"}).json() == []
        assert client.post("/runs/crons/count", json={}).json() == 0
        assert client.post("/runs/crons/search", json={"limit": 0}).status_code == 422
        assert client.patch("/runs/crons/c1", json={"schedule": "* * * * *"}).status_code == 404
        assert client.delete("/runs/crons/c1").status_code == 404
