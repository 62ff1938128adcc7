"""Threads, state and history over real HTTP (SQLite, and Postgres + Redis)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph, interrupt
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer
from tests.server.conftest import BACKENDS, Serve


@pytest.fixture(params=BACKENDS)
def client(request: pytest.FixtureRequest, serve: Serve) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(backend=request.param), timeout=10) as client:
        yield client


def say(text: str) -> dict[str, object]:
    return {"values": {"messages": [{"role": "user", "content": text}]}}


def test_create_get_patch_delete(client: httpx.Client) -> None:
    created = client.post("/threads", json={"thread_id": "t1", "metadata": {"team": "a"}})
    assert created.status_code == 200, created.text
    thread = created.json()
    assert (thread["thread_id"], thread["metadata"], thread["status"]) == (
        "t1",
        {"team": "a"},
        "idle",
    )
    assert thread["values"]["messages"] == []
    assert thread["created_at"] == thread["updated_at"]

    assert client.get("/threads/t1").json()["metadata"] == {"team": "a"}
    patched = client.patch("/threads/t1", json={"metadata": {"n": 2}}).json()
    assert patched["metadata"] == {"team": "a", "n": 2}
    assert patched["updated_at"] > patched["created_at"]
    minimal = client.patch(
        "/threads/t1", json={"metadata": {}}, headers={"prefer": "return=minimal"}
    )
    assert (minimal.status_code, minimal.content) == (204, b"")

    assert client.delete("/threads/t1").status_code == 204
    assert client.get("/threads/t1").status_code == 404
    assert client.delete("/threads/t1").status_code == 404


def test_create_random_id_and_if_exists(client: httpx.Client) -> None:
    first = client.post("/threads", json={}).json()
    second = client.post("/threads", json={}).json()
    assert first["thread_id"] != second["thread_id"] and len(first["thread_id"]) == 36

    again = client.post("/threads", json={"thread_id": first["thread_id"], "metadata": {"x": 1}})
    assert again.status_code == 409 and "already exists" in again.json()["detail"]
    kept = client.post(
        "/threads", json={"thread_id": first["thread_id"], "if_exists": "do_nothing"}
    )
    assert kept.status_code == 200 and kept.json()["metadata"] == {}  # the existing thread


def test_update_state_then_state_and_history(client: httpx.Client) -> None:
    client.post("/threads", json={"thread_id": "t2"})
    updated = client.post("/threads/t2/state", json=say("hello"))
    assert updated.status_code == 200, updated.text
    assert updated.json()["checkpoint"]["checkpoint_id"] == "2"

    state = client.get("/threads/t2/state").json()
    assert [m["content"] for m in state["values"]["messages"]] == ["hello"]  # LangChain's format
    assert state["values"]["messages"][0]["type"] == "human"
    own = client.get("/threads/t2/state", headers={"x-message-format": "tenxgraph"}).json()
    assert own["values"]["messages"][0]["content"][0]["text"] == "hello"
    assert own["values"]["messages"][0]["role"] == "user"
    assert client.get("/threads/t2/state", headers={"x-message-format": "xml"}).status_code == 422
    assert state["checkpoint"] == {
        "thread_id": "t2",
        "checkpoint_ns": "",
        "checkpoint_id": "2",
        "checkpoint_map": None,
    }
    assert state["parent_checkpoint"]["checkpoint_id"] == "1"
    assert (state["next"], state["tasks"], state["interrupts"]) == ([], [], [])
    assert state["metadata"]["source"] == "update"

    client.post("/threads/t2/state", json=say("again"))
    history = client.post("/threads/t2/history", json={"limit": 10}).json()
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == ["3", "2", "1"]
    assert [len(h["values"]["messages"]) for h in history] == [2, 1, 0]
    before = client.post("/threads/t2/history", json={"before": "3", "limit": 1}).json()
    assert [h["checkpoint"]["checkpoint_id"] for h in before] == ["2"]
    for spelled in ({"checkpoint_id": "3"}, {"configurable": {"checkpoint_id": "3"}}):
        before = client.post("/threads/t2/history", json={"before": spelled}).json()
        assert [h["checkpoint"]["checkpoint_id"] for h in before] == ["2", "1"], spelled
    unnamed = client.post("/threads/t2/history", json={"before": {"configurable": {}}})
    assert unnamed.status_code == 422 and "'before' must be" in unnamed.json()["detail"]
    old = client.get("/threads/t2/state/2").json()
    assert len(old["values"]["messages"]) == 1
    by_body = client.post(
        "/threads/t2/state/checkpoint", json={"checkpoint": {"checkpoint_id": "1"}}
    )
    assert by_body.json()["values"]["messages"] == []


def test_search_count_and_copy(client: httpx.Client) -> None:
    for thread_id, team in (("a", "red"), ("b", "blue"), ("c", "red")):
        client.post("/threads", json={"thread_id": thread_id, "metadata": {"team": team}})
    ids = lambda body: [t["thread_id"] for t in client.post("/threads/search", json=body).json()]  # noqa: E731
    assert ids({}) == ["c", "b", "a"]  # newest update first
    assert ids({"metadata": {"team": "red"}}) == ["c", "a"]
    assert ids({"limit": 1, "offset": 1}) == ["b"]
    assert ids({"ids": ["a", "b"], "sort_by": "thread_id", "sort_order": "asc"}) == ["a", "b"]
    assert ids({"status": "interrupted"}) == []
    assert client.post("/threads/count", json={"metadata": {"team": "red"}}).json() == 2

    client.post("/threads/a/state", json=say("copied"))
    copy = client.post("/threads/a/copy").json()
    assert copy["thread_id"] not in ("a", "b", "c")
    copied = client.get(f"/threads/{copy['thread_id']}/state").json()
    assert copied["values"]["messages"][0]["content"] == "copied"


def test_bad_input_is_a_clear_4xx(client: httpx.Client) -> None:
    client.post("/threads", json={"thread_id": "t3"})
    cases = [
        (
            client.post("/threads", content=b"{no", headers={"content-type": "application/json"}),
            422,
            "malformed JSON",
        ),
        (client.post("/threads", json={"if_exists": "maybe"}), 422, "if_exists"),
        (client.post("/threads/search", json={"limit": 5000}), 422, "limit"),
        (client.get("/threads/missing/state"), 404, "not found"),
        (client.post("/threads/missing/state", json=say("x")), 404, "not found"),
        (client.post("/threads/missing/history", json={}), 404, "not found"),
        (client.get("/threads/t3/state/abc"), 422, "checkpoint_id"),
        (client.get("/threads/t3/state/99"), 404, "checkpoint 99"),
        (client.post("/threads/t3/state", json={"values": {"nope": 1}}), 422, "nope"),
        (client.post("/threads/t3/state", json={"values": {}, "as_node": "ghost"}), 422, "ghost"),
        (client.post("/threads", json={"thread_id": "x" * 300}), 400, "thread_id"),
        (client.post("/threads", json={"ttl": 5}), 422, "ttl"),
        (client.post("/threads/search", json={"values": {"a": 1}}), 422, "values"),
    ]
    for response, status, words in cases:
        assert response.status_code == status, (response.request.url, response.text)
        assert words in response.json()["detail"], response.text


def test_openapi_and_health(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/threads", "/threads/{thread_id}/state", "/threads/search", "/store/items"):
        assert path in spec["paths"], path
    assert client.get("/ok").json() == {"ok": True}
    assert client.get("/ready").json() == {"ok": True}
    assert client.get("/info").json()["graph_id"] == "agent"


def test_state_updates_take_the_message_forms_runs_take(client: httpx.Client) -> None:
    client.post("/threads", json={"thread_id": "forms"})
    messages = [
        ["user", "a pair"],
        {"type": "human", "content": "langchain"},
        {"role": "user", "content": "dict"},
    ]
    response = client.post("/threads/forms/state", json={"values": {"messages": messages}})
    assert response.status_code == 200, response.text
    shown = client.get("/threads/forms/state").json()["values"]["messages"]
    assert [(m["type"], m["content"]) for m in shown] == [
        ("human", "a pair"),
        ("human", "langchain"),
        ("human", "dict"),
    ]
    removed = client.post(
        "/threads/forms/state",
        json={"values": {"messages": [{"type": "remove", "id": shown[0]["id"]}]}},
    )
    assert removed.status_code == 200, removed.text
    shown = client.get("/threads/forms/state").json()["values"]["messages"]
    assert [m["content"] for m in shown] == ["langchain", "dict"]
    twice = client.post("/threads/forms/state", json={"values": {"messages": [], "context": []}})
    assert twice.status_code == 422 and "once" in twice.json()["detail"]


def test_history_filters_by_metadata_and_supersteps_apply_on_create(client: httpx.Client) -> None:
    body = {
        "thread_id": "steps",
        "supersteps": [
            {"updates": [{"values": {"messages": [["user", "one"]]}, "as_node": "agent"}]},
            {"updates": [{"values": {"messages": [["assistant", "two"]]}, "as_node": "agent"}]},
        ],
    }
    created = client.post("/threads", json=body)
    assert created.status_code == 200, created.text
    assert [m["type"] for m in created.json()["values"]["messages"]] == ["human", "ai"]
    history = client.post("/threads/steps/history", json={"metadata": {"node": "agent"}}).json()
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == ["3", "2"]
    assert all(h["metadata"]["node"] == "agent" for h in history)
    created_only = client.post(
        "/threads/steps/history", json={"metadata": {"node": "create_thread"}}
    ).json()
    assert [h["checkpoint"]["checkpoint_id"] for h in created_only] == ["1"]
    assert client.post("/threads/count", json={"status": "idle"}).json() == 1


def deploy_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    def deploy(state: AgentState) -> Message:
        answer = interrupt({"question": "Deploy?"})
        return Message.text_message(f"Deploy: {answer}", role="assistant")

    builder = StateGraph(AgentState)
    builder.add_node("deploy", deploy)
    builder.set_entry_point("deploy")
    return builder.compile(checkpointer)


def test_a_paused_thread_shows_its_interrupt(serve: Serve, tmp_path: Path) -> None:
    db = tmp_path / "paused.sqlite"
    saver = SqliteCheckpointer(str(db))
    writer = deploy_graph(saver)  # runs made outside the server, on the same file
    config = {"thread_id": "p", "user_id": "default"}
    writer.invoke({"messages": [("user", "ship it")]}, config)
    url = serve(graph=lambda _: deploy_graph(SqliteCheckpointer(str(db))))
    with httpx.Client(base_url=url) as client:
        thread = client.get("/threads/p").json()
        assert thread["status"] == "interrupted"
        [(interrupt_id, [shown])] = thread["interrupts"].items()
        assert shown == {"value": {"question": "Deploy?"}, "id": interrupt_id}
        state = client.get("/threads/p/state").json()
        assert state["next"] == ["deploy"]
        assert state["interrupts"] == [shown]
        assert [(t["name"], t["interrupts"]) for t in state["tasks"]] == [("deploy", [shown])]
        assert [
            t["thread_id"]
            for t in client.post("/threads/search", json={"status": "interrupted"}).json()
        ] == ["p"]

        writer.invoke({"resume": "yes"}, config)
        resumed = client.get("/threads/p").json()
        assert (resumed["status"], resumed["interrupts"]) == ("idle", {})
        assert resumed["values"]["messages"][-1]["content"] == "Deploy: yes"
        assert client.get("/threads/p/state").json()["next"] == []
    saver.close()


def test_deleting_a_thread_a_run_holds_answers_409(serve: Serve, tmp_path: Path) -> None:
    """A run outside the server holds the thread: DELETE refuses, and the run saves normally."""
    db = tmp_path / "busy.sqlite"
    started, gate = threading.Event(), threading.Event()

    def reply(state: AgentState) -> Message:
        started.set()
        gate.wait(30)
        return Message.text_message("done", role="assistant")

    def busy_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
        builder = StateGraph(AgentState)
        builder.add_node("reply", reply)
        builder.set_entry_point("reply")
        return builder.compile(checkpointer)

    saver = SqliteCheckpointer(str(db))
    config = {"thread_id": "b", "user_id": "default"}
    writer = busy_graph(saver)
    run = threading.Thread(  # a loop of its own, closed when the run ends
        target=asyncio.run, args=(writer.ainvoke({"messages": [("user", "hi")]}, config),)
    )
    url = serve(graph=lambda _: busy_graph(SqliteCheckpointer(str(db))))
    run.start()
    try:
        assert started.wait(30)
        with httpx.Client(base_url=url, timeout=10) as client:
            refused = client.delete("/threads/b")
            assert refused.status_code == 409, refused.text
            assert "thread 'b' is busy" in refused.json()["detail"]
            gate.set()
            run.join(30)
            messages = client.get("/threads/b").json()["values"]["messages"]
            assert [m["content"] for m in messages] == ["hi", "done"]
            assert client.delete("/threads/b").status_code == 204
            assert client.get("/threads/b").status_code == 404
    finally:
        gate.set()
        run.join(30)
        saver.close()


@pytest.mark.parametrize("text", ["²", "١٢", "0", "-1", "1.5", ""])
def test_a_checkpoint_id_that_is_no_version_is_a_422(text: str) -> None:
    """Only ASCII digits name a version: ``"²".isdigit()`` is true, and ``int("²")`` fails."""
    from fastapi import HTTPException

    from tenxgraph.server.threads import version_of

    with pytest.raises(HTTPException) as caught:
        version_of(text)
    assert caught.value.status_code == 422
    assert version_of("12") == 12
