"""Runs and state updates from an older checkpoint, through the official langgraph-sdk (issue 33).

useStream and Agent Chat UI regenerate, edit and switch branches by sending
``checkpoint`` (or ``checkpoint_id``) with a run, and read the branches back
from the history's ``parent_checkpoint``. Here the same calls the SDK makes,
on SQLite and on Postgres + Redis (whose background runs go through the
durable queue).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk._sync.client import SyncLangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.server.conftest import BACKENDS, Serve

GRAPH = "agent"


@pytest.fixture(params=BACKENDS)
def url(serve: Serve, request: pytest.FixtureRequest) -> str:
    return serve(backend=request.param)


@pytest.fixture
def client(url: str) -> Iterator[SyncLangGraphClient]:
    with get_sync_client(url=url, api_key=None) as client:
        yield client


def said(values: dict[str, Any]) -> list[str]:
    """The text of each message, whichever message format the server answers in."""
    found = []
    for message in values["messages"]:
        content = message["content"]
        if isinstance(content, str):
            found.append(content)
        else:
            found.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return found


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def test_a_run_from_a_checkpoint_branches_and_the_history_shows_both_branches(
    client: SyncLangGraphClient,
) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH, input=user("one"))
    client.runs.wait(thread_id, GRAPH, input=user("two"))
    history = client.threads.get_history(thread_id, limit=100)
    old_head = history[0]
    first_turn = next(s for s in history if said(s["values"]) == ["one", "echo: one"])
    question = next(s for s in history if said(s["values"])[-1:] == ["two"])
    assert question["next"] == ["agent"]  # saved mid-run: the model is to run next
    assert old_head["next"] == []

    # edit and resend: a new question from the end of the first turn (a Checkpoint)
    edited = client.runs.wait(
        thread_id, GRAPH, input=user("TWO"), checkpoint=first_turn["checkpoint"]
    )
    assert said(edited) == ["one", "echo: one", "TWO", "echo: TWO"]
    # regenerate: no input, from the checkpoint holding the question alone (an id)
    parts = list(
        client.runs.stream(
            thread_id, GRAPH, input=None, checkpoint_id=question["checkpoint"]["checkpoint_id"]
        )
    )
    assert "error" not in [p.event for p in parts], parts
    state = client.threads.get_state(thread_id)
    assert said(state["values"]) == ["one", "echo: one", "two", "echo: two"]

    tree = client.threads.get_history(thread_id, limit=100)
    ids = [int(s["checkpoint"]["checkpoint_id"]) for s in tree]
    assert ids == sorted(ids, reverse=True)
    parent = {
        s["checkpoint"]["checkpoint_id"]: (s["parent_checkpoint"] or {}).get("checkpoint_id")
        for s in tree
    }
    chain, at = [], state["checkpoint"]["checkpoint_id"]
    while at is not None:  # from the head back to the root, by parent_checkpoint
        chain.append(at)
        at = parent[at]
    assert question["checkpoint"]["checkpoint_id"] in chain
    assert old_head["checkpoint"]["checkpoint_id"] not in chain
    assert state["parent_checkpoint"] == {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": chain[1],
        "checkpoint_map": None,
    }
    edit_start = next(s for s in tree if said(s["values"])[-1:] == ["TWO"])
    assert (
        parent[edit_start["checkpoint"]["checkpoint_id"]]
        == first_turn["checkpoint"]["checkpoint_id"]
    )
    # every branch stays readable at its checkpoints
    old = client.threads.get_state(thread_id, checkpoint_id=old_head["checkpoint"]["checkpoint_id"])
    assert said(old["values"]) == ["one", "echo: one", "two", "echo: two"]
    assert old["checkpoint"] == old_head["checkpoint"]


def test_a_state_update_from_a_checkpoint_branches_there(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH, input=user("one"))
    client.runs.wait(thread_id, GRAPH, input=user("two"))
    first_turn = next(
        s
        for s in client.threads.get_history(thread_id, limit=100)
        if said(s["values"]) == ["one", "echo: one"]
    )
    answer = client.threads.update_state(
        thread_id,
        {"messages": [{"role": "user", "content": "note"}]},
        checkpoint_id=first_turn["checkpoint"]["checkpoint_id"],
    )
    state = client.threads.get_state(thread_id)
    assert state["checkpoint"]["checkpoint_id"] == answer["checkpoint"]["checkpoint_id"]
    assert state["parent_checkpoint"]["checkpoint_id"] == first_turn["checkpoint"]["checkpoint_id"]
    assert said(state["values"]) == ["one", "echo: one", "note"]


def test_a_background_run_from_a_checkpoint_branches(client: SyncLangGraphClient) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH, input=user("one"))
    first = client.threads.get_history(thread_id, limit=1)[0]["checkpoint"]
    client.runs.wait(thread_id, GRAPH, input=user("two"))
    run = client.runs.create(thread_id, GRAPH, input=user("again"), checkpoint=first)
    client.runs.join(thread_id, run["run_id"])
    state = client.threads.get_state(thread_id)
    assert said(state["values"]) == ["one", "echo: one", "again", "echo: again"]


def test_a_checkpoint_the_thread_lacks_is_refused_before_the_run(
    client: SyncLangGraphClient, url: str
) -> None:
    thread_id = client.threads.create()["thread_id"]
    client.runs.wait(thread_id, GRAPH, input=user("one"))
    saved = len(client.threads.get_history(thread_id, limit=100))
    runs = f"{url}/threads/{thread_id}/runs"
    for path, body, status in [
        ("/wait", {"checkpoint_id": "99"}, 404),
        ("/stream", {"checkpoint": {"checkpoint_id": "99"}}, 404),
        ("", {"checkpoint": {"checkpoint_id": "99", "checkpoint_ns": ""}}, 404),
        ("/wait", {"checkpoint_id": "latest"}, 422),
        ("/wait", {"checkpoint_id": "1", "checkpoint": {"checkpoint_id": "2"}}, 422),
    ]:
        answer = httpx.post(runs + path, json={"assistant_id": GRAPH, "input": user("x"), **body})
        assert answer.status_code == status, (path, body, answer.text)
    with pytest.raises(NotFoundError):
        client.threads.update_state(thread_id, {"messages": []}, checkpoint_id="99")
    with pytest.raises(UnprocessableEntityError):
        client.threads.update_state(thread_id, {"messages": []}, checkpoint_id="x")
    other = {"thread_id": "someone-else", "checkpoint_ns": "", "checkpoint_id": "1"}
    answer = httpx.post(
        f"{url}/threads/{thread_id}/runs/wait",
        json={"assistant_id": GRAPH, "input": user("x"), "checkpoint": other},
    )
    assert answer.status_code == 422 and "another thread" in answer.text
    assert [r["status"] for r in client.runs.list(thread_id)] == ["success"]  # no run created
    assert len(client.threads.get_history(thread_id, limit=100)) == saved


def test_a_resume_from_an_older_pause_branches_there(serve: Serve) -> None:
    from tests.server.test_runs import asking_graph

    url = serve(graph=asking_graph)
    with get_sync_client(url=url, api_key=None) as client:
        thread_id = client.threads.create()["thread_id"]
        client.runs.wait(thread_id, "agent", input=user("hi"))
        paused = client.threads.get_state(thread_id)
        assert paused["next"] == ["ask"] and paused["interrupts"]
        client.runs.wait(thread_id, "agent", command={"resume": "Ada"})
        assert said(client.threads.get_state(thread_id)["values"])[-1] == "hello Ada"
        again = client.runs.wait(
            thread_id, "agent", command={"resume": "Grace"}, checkpoint=paused["checkpoint"]
        )
        assert said(again)[-1] == "hello Grace"
        history = client.threads.get_history(thread_id, limit=100)
        parent = {
            s["checkpoint"]["checkpoint_id"]: (s["parent_checkpoint"] or {}).get("checkpoint_id")
            for s in history
        }
        chain, at = [], history[0]["checkpoint"]["checkpoint_id"]
        while at is not None:
            chain.append(at)
            at = parent[at]
        ada = next(s for s in history if said(s["values"])[-1] == "hello Ada")
        assert paused["checkpoint"]["checkpoint_id"] in chain
        assert ada["checkpoint"]["checkpoint_id"] not in chain  # the other branch, still there
