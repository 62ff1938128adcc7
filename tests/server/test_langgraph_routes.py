"""LangGraph's routes beside the basic ones (issue #33): what the official clients call.

Thread metadata naming the graph, ``state_updated_at``, the thread stream,
``PATCH .../state``, ``/threads/prune``, ``/runs/batch``, assistant
versions, a rolled-back run forgotten, a resume beside an empty input, a
missing store item; and the 4xx each bad body gets. Over real HTTP
(``httpx``); the official SDKs drive the same routes in tests/clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.clients.langgraph.graph import build
from tests.server.conftest import BACKENDS, Serve

RUN = {"assistant_id": "agent"}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture
def client(serve: Serve) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(build, memory=True), timeout=60) as client:
        yield client


@pytest.fixture(params=BACKENDS)
def any_client(serve: Serve, request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    """``client`` on SQLite, and on Postgres + Redis (the durable run table)."""
    url = serve(build, backend=request.param, memory=True)
    with httpx.Client(base_url=url, timeout=60) as client:
        yield client


def thread(client: httpx.Client, **body: Any) -> str:
    answer = client.post("/threads", json=body)
    assert answer.status_code == 200, answer.text
    thread_id: str = answer.json()["thread_id"]
    return thread_id


def wait_run(client: httpx.Client, thread_id: str, text: str, **body: Any) -> Any:
    answer = client.post(
        f"/threads/{thread_id}/runs/wait", json={**RUN, "input": user(text), **body}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def run_status(client: httpx.Client, thread_id: str, run_id: str, *statuses: str) -> None:
    for _ in range(600):
        if client.get(f"/threads/{thread_id}/runs/{run_id}").json()["status"] in statuses:
            return
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {statuses}")


def refused(answer: httpx.Response, status: int, words: str) -> None:
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"], answer.text


# ---- thread metadata and fields ----


def test_a_run_names_the_graph_in_its_threads_metadata_once(any_client: httpx.Client) -> None:
    client = any_client
    thread_id = thread(client, metadata={"owner": "me"})
    wait_run(client, thread_id, "hi")
    tags = {"owner": "me", "graph_id": "agent", "assistant_id": "agent"}
    assert client.get(f"/threads/{thread_id}").json()["metadata"] == tags
    found = client.post("/threads/search", json={"metadata": {"graph_id": "agent"}}).json()
    assert [t["thread_id"] for t in found] == [thread_id]
    nodes = [
        s["metadata"]["node"] for s in client.post(f"/threads/{thread_id}/history", json={}).json()
    ]
    wait_run(client, thread_id, "again")
    after = [
        s["metadata"]["node"] for s in client.post(f"/threads/{thread_id}/history", json={}).json()
    ]
    assert "update_metadata" not in after  # the run's own first save wrote them
    assert len(after) - len(nodes) == len(nodes) - 1  # each run its saves, none for the tags


def test_a_thread_a_run_creates_is_created_naming_the_graph(client: httpx.Client) -> None:
    wait_run(client, "made-by-run", "hi", if_not_exists="create")
    made = client.get("/threads/made-by-run").json()
    assert made["metadata"] == {"graph_id": "agent", "assistant_id": "agent"}
    kept = client.post(
        "/runs/wait", json={**RUN, "input": user("hi"), "on_completion": "keep"}
    ).headers["content-location"]
    kept_id = kept.split("/")[2]
    assert client.get(f"/threads/{kept_id}").json()["metadata"]["graph_id"] == "agent"
    queued = {**RUN, "input": user("hi"), "if_not_exists": "create"}
    assert client.post("/threads/queued/runs", json=queued).status_code == 200
    listed = client.get("/threads/queued").json()  # at once, whether its run started or not
    assert listed["metadata"] == {"graph_id": "agent", "assistant_id": "agent"}


def test_a_refused_run_leaves_the_thread_as_it_was(client: httpx.Client) -> None:
    thread_id = thread(client)
    bad = {**RUN, "input": user("hi"), "config": {"recursion_limit": -1}}
    refused(client.post(f"/threads/{thread_id}/runs/wait", json=bad), 422, "recursion_limit")
    bad = {**RUN, "input": user("hi"), "config": {"thread_metadata": "graph"}}
    refused(client.post(f"/threads/{thread_id}/runs/wait", json=bad), 422, "thread_metadata")
    assert client.get(f"/threads/{thread_id}").json()["metadata"] == {}
    refused(client.post("/threads/nope/runs/wait", json={**RUN, "input": user("x")}), 404, "nope")
    assert client.get("/threads/nope").status_code == 404


def test_thread_answers_carry_state_updated_at(client: httpx.Client) -> None:
    created = client.post("/threads", json={}).json()
    assert created["state_updated_at"] == created["updated_at"]
    wait_run(client, created["thread_id"], "hi")
    got = client.get(f"/threads/{created['thread_id']}").json()
    assert got["state_updated_at"] > created["state_updated_at"]
    assert len(got["values"]["messages"]) == 2 and got["interrupts"] == {}
    newer = thread(client)
    by_state = {"sort_by": "state_updated_at", "sort_order": "asc"}
    listed = [t["thread_id"] for t in client.post("/threads/search", json=by_state).json()]
    assert listed == [created["thread_id"], newer]


# ---- assistants ----


def test_the_served_graphs_assistant_has_one_version_and_never_changes(
    client: httpx.Client,
) -> None:
    assistant = client.get("/assistants/agent").json()
    assert assistant["description"] == ""
    edges = client.get("/assistants/agent/graph").json()["edges"]
    assert all(isinstance(e.get("data", ""), str) for e in edges), edges
    versions = client.post("/assistants/agent/versions", json={}).json()
    assert [v["version"] for v in versions] == [1]
    assert client.post("/assistants/agent/latest", json={"version": 1}).json() == assistant
    refused(client.post("/assistants/agent/latest", json={"version": 2}), 404, "version 2")
    refused(client.post("/assistants/agent/latest", json={"version": "x"}), 422, "version")
    refused(client.patch("/assistants/agent", json={"metadata": {}}), 422, "create an assistant")
    refused(client.delete("/assistants/agent"), 422, "served graph")
    refused(
        client.post("/assistants", json={"graph_id": "agent", "assistant_id": "agent"}),
        422,
        "served graph",
    )
    refused(client.post("/assistants/other/versions", json={}), 404, "other")


def test_assistants_are_versioned_presets_whose_runs_get_their_config(
    any_client: httpx.Client,
) -> None:
    client = any_client
    refused(client.post("/assistants", json={"graph_id": "other"}), 404, "other")
    refused(client.post("/assistants", json={"graph_id": "agent", "bogus": 1}), 422, "bogus")
    body = {
        "graph_id": "agent",
        "assistant_id": "preset",
        "name": "Preset",
        "config": {"configurable": {"tone": "dry", "x": 1}},
        "context": {"who": "tester"},
        "metadata": {"team": "a"},
    }
    made = client.post("/assistants", json=body).json()
    assert (made["version"], made["name"], made["graph_id"]) == (1, "Preset", "agent")
    refused(client.post("/assistants", json=body), 409, "exists")
    same = client.post("/assistants", json={**body, "name": "x", "if_exists": "do_nothing"})
    assert same.json()["name"] == "Preset"
    changed = client.patch("/assistants/preset", json={"metadata": {"v": 2}}).json()
    assert changed["version"] == 2 and changed["metadata"] == {"team": "a", "v": 2}
    versions = client.post("/assistants/preset/versions", json={}).json()
    assert [v["version"] for v in versions] == [2, 1]
    assert client.post("/assistants/preset/latest", json={"version": 1}).json()["version"] == 1
    assert client.get("/assistants/preset").json()["metadata"] == {"team": "a"}
    refused(client.post("/assistants/preset/latest", json={"version": 9}), 404, "version 9")
    found = client.post("/assistants/search", json={"metadata": {"team": "a"}}).json()
    assert [a["assistant_id"] for a in found] == ["preset"]
    assert client.post("/assistants/count", json={"graph_id": "agent"}).json() == 2
    assert client.get("/assistants/preset/schemas").status_code == 200
    thread_id = thread(client)
    run = {
        "assistant_id": "preset",
        "input": {"messages": [{"role": "user", "content": "hi"}]},
        "config": {"configurable": {"x": 2}},
    }
    started = client.post(f"/threads/{thread_id}/runs", json=run).json()
    assert started["assistant_id"] == "preset"
    assert started["kwargs"]["config"]["configurable"] == {"tone": "dry", "x": 2}
    assert started["kwargs"]["context"] == {"who": "tester"}
    client.get(f"/threads/{thread_id}/runs/{started['run_id']}/join")
    for path in ("/assistants/a%00b", "/assistants/a%00b/versions"):  # no backend keeps NUL
        method = client.get if path.endswith("b") else client.post
        assert 400 <= method(path).status_code < 500
    assert client.delete("/assistants/preset").status_code == 204
    refused(client.get("/assistants/preset"), 404, "preset")
    refused(client.post(f"/threads/{thread_id}/runs", json=run), 404, "preset")


# ---- thread state, prune ----


def test_patch_state_merges_metadata_as_a_new_checkpoint(client: httpx.Client) -> None:
    thread_id = thread(client)
    wait_run(client, thread_id, "hi")
    before = client.get(f"/threads/{thread_id}/state").json()
    answer = client.patch(f"/threads/{thread_id}/state", json={"metadata": {"note": "patched"}})
    assert answer.status_code == 204, answer.text
    state = client.get(f"/threads/{thread_id}/state").json()
    assert state["metadata"]["note"] == "patched" and state["metadata"]["node"] == "update_metadata"
    assert state["values"] == before["values"]
    assert (
        int(state["checkpoint"]["checkpoint_id"]) == int(before["checkpoint"]["checkpoint_id"]) + 1
    )
    assert client.get(f"/threads/{thread_id}").json()["metadata"]["note"] == "patched"
    refused(client.patch(f"/threads/{thread_id}/state", json={"metadata": [1]}), 422, "metadata")
    refused(client.patch(f"/threads/{thread_id}/state", json={}), 422, "metadata")
    refused(client.patch("/threads/nope/state", json={"metadata": {}}), 404, "nope")


def test_prune_deletes_the_callers_threads(client: httpx.Client) -> None:
    first, second = thread(client), thread(client)
    answer = client.post("/threads/prune", json={"thread_ids": [first, second, first, "nope"]})
    assert answer.json() == {"pruned_count": 2}
    assert client.get(f"/threads/{first}").status_code == 404
    refused(
        client.post("/threads/prune", json={"thread_ids": [], "strategy": "keep_latest"}),
        422,
        "append-only",
    )
    refused(client.post("/threads/prune", json={"thread_ids": "x"}), 422, "thread_ids")
    refused(client.post("/threads/prune", json={"thread_ids": ["a"] * 1001}), 422, "thread_ids")


def test_prune_refuses_a_busy_thread_before_deleting_any(client: httpx.Client) -> None:
    idle, busy = thread(client), thread(client)
    run = client.post(f"/threads/{busy}/runs", json={**RUN, "input": user("sleep 30")}).json()
    run_status(client, busy, run["run_id"], "running")
    refused(client.post("/threads/prune", json={"thread_ids": [idle, busy]}), 409, busy)
    assert client.get(f"/threads/{idle}").status_code == 200
    client.post(f"/threads/{busy}/runs/{run['run_id']}/cancel?wait=1")


# ---- runs ----


def test_a_batch_starts_every_run_or_none(any_client: httpx.Client) -> None:
    client = any_client
    thread_id = thread(client)
    batch = [
        {**RUN, "thread_id": thread_id, "input": user("one")},
        {"assistantId": "agent", "assistant_id": "agent", "input": user("two")},
    ]
    runs = client.post("/runs/batch", json=batch).json()
    assert [r["status"] for r in runs] == ["pending", "pending"]
    assert runs[0]["thread_id"] == thread_id and runs[1]["thread_id"] != thread_id
    joined = client.get(f"/threads/{thread_id}/runs/{runs[0]['run_id']}/join").json()
    assert len(joined["messages"]) == 2
    bad_batches = [
        ([], 422, "1 to 100"),
        ({"assistant_id": "agent"}, 422, "list"),
        ([{**RUN, "input": user("x")}, {"assistant_id": "other"}], 404, "other"),
        ([{**RUN, "thread_id": "nope", "input": user("x")}], 404, "nope"),
        ([{"assistantId": "other", "assistant_id": "agent"}], 422, "different"),
        ([{**RUN, "input": {"not_a_field": 1}}], 422, "not_a_field"),
        ([{**RUN, "surprise": 1}], 422, "surprise"),
    ]
    for body, status, words in bad_batches:
        refused(client.post("/runs/batch", json=body), status, words)
    assert len(client.get(f"/threads/{thread_id}/runs").json()) == 1  # none of them started


def test_a_rolled_back_run_is_forgotten(any_client: httpx.Client) -> None:
    client = any_client
    thread_id = thread(client)
    run = client.post(f"/threads/{thread_id}/runs", json={**RUN, "input": user("sleep 30")}).json()
    run_status(client, thread_id, run["run_id"], "running")
    answer = client.post(f"/threads/{thread_id}/runs/{run['run_id']}/cancel?action=rollback")
    assert answer.status_code == 202
    assert client.get(f"/threads/{thread_id}/runs/{run['run_id']}").status_code == 404
    assert client.get(f"/threads/{thread_id}/runs").json() == []
    assert client.get(f"/threads/{thread_id}/state").json()["values"]["messages"] == []


def test_resume_beside_an_empty_input(client: httpx.Client) -> None:
    thread_id = thread(client)
    wait_run(client, thread_id, "ask")
    both = {**RUN, "input": user("x"), "command": {"resume": "Ada"}}
    refused(client.post(f"/threads/{thread_id}/runs/wait", json=both), 422, "not both")
    interrupts = client.get(f"/threads/{thread_id}").json()["interrupts"]
    patched = client.patch(f"/threads/{thread_id}/state", json={"metadata": {"seen": True}})
    assert patched.status_code == 204  # a metadata change keeps the pause as it was
    assert client.get(f"/threads/{thread_id}").json()["interrupts"] == interrupts != {}
    resumed = {**RUN, "input": {}, "command": {"resume": "Ada"}}
    values = client.post(f"/threads/{thread_id}/runs/wait", json=resumed).json()
    assert values["messages"][-1]["content"] == "you answered: Ada"
    goto = {**RUN, "input": {}, "command": {"goto": "agent"}}
    values = client.post(f"/threads/{thread_id}/runs/wait", json=goto).json()
    assert values["messages"][-1]["content"].startswith("said: you answered: Ada")


def test_a_missing_store_item_is_null(client: httpx.Client) -> None:
    answer = client.get("/store/items", params={"namespace": "a", "key": "missing"})
    assert answer.status_code == 200 and answer.json() is None


# ---- the thread stream ----


def events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The SSE events of a streamed response, one dict (``id``, ``event``, ``data``) each."""
    event: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "event" in event:
                yield event
            event = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            event[name] = json.loads(value) if name == "data" else value


def until_done(stream: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = []
    for event in stream:
        seen.append(event)
        if event["event"] == "run_done":
            return seen
    raise AssertionError(f"the stream ended without run_done: {seen}")


def test_the_thread_stream_follows_runs_one_after_the_other(any_client: httpx.Client) -> None:
    client = any_client
    thread_id = thread(client)
    wait_run(client, thread_id, "first")
    path = f"/threads/{thread_id}/stream"
    with client.stream("GET", path, headers={"Last-Event-ID": "-"}) as response:
        assert response.status_code == 200
        stream = events(response)
        first = until_done(stream)
        run_id = first[0]["data"]["run_id"]
        assert first[0]["event"] == "metadata" and "end" not in [e["event"] for e in first]
        assert first[-1]["data"] == {"run_id": run_id, "status": "success"}
        assert [e["id"] for e in first[:2]] == [f"{run_id}:1", f"{run_id}:2"]
        client.post(f"/threads/{thread_id}/runs", json={**RUN, "input": user("second")})
        second = until_done(stream)
        assert second[0]["data"]["run_id"] != run_id
    with client.stream("GET", path, headers={"Last-Event-ID": f"{run_id}:1"}) as response:
        assert next(events(response))["id"] == f"{run_id}:2"
    after_done = {"Last-Event-ID": first[-1]["id"]}  # the run_done: the next run comes next
    with client.stream("GET", path, headers=after_done) as response:
        assert next(events(response))["data"]["run_id"] == second[0]["data"]["run_id"]
    lifecycle = {"Last-Event-ID": "-"}
    with client.stream("GET", path + "?stream_mode=lifecycle", headers=lifecycle) as response:
        kinds = [e["event"] for e in until_done(events(response))]
        assert kinds == ["metadata", "run_done"]


def test_the_thread_stream_starts_at_the_run_going_now(client: httpx.Client) -> None:
    thread_id = thread(client)
    wait_run(client, thread_id, "earlier")
    run = client.post(f"/threads/{thread_id}/runs", json={**RUN, "input": user("sleep 1")}).json()
    with client.stream("GET", f"/threads/{thread_id}/stream") as response:
        first = until_done(events(response))
    assert first[0]["data"]["run_id"] == run["run_id"]


def test_bad_thread_stream_requests_are_4xx(client: httpx.Client) -> None:
    thread_id = thread(client)
    path = f"/threads/{thread_id}/stream"
    refused(client.get(path, params={"stream_mode": "values"}), 422, "thread stream mode")
    refused(client.get(path, headers={"Last-Event-ID": "7"}), 400, "<run_id>:<n>")
    refused(client.get(path, headers={"Last-Event-ID": "gone:3"}), 410, "gone")
    refused(client.get("/threads/nope/stream"), 404, "nope")
