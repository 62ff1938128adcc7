"""Tool approval through the official ``langgraph-sdk`` Python client.

The server pauses at ``HumanApproval``'s interrupt; the SDK reads the
pending calls from the stream's ``__interrupt__`` and the thread's
``interrupts``, and resumes with ``command={"resume": {"decisions": [...]}}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph_sdk", reason="the official LangGraph SDK is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")

from langgraph_sdk import get_sync_client

from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.testing.server import served
from tests.server.approval_graph import GRAPH_ID, graph


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tenxgraph.server.app import create_app

    folder: Path = tmp_path_factory.mktemp("approval-sdk")
    checkpointer = SqliteCheckpointer(str(folder / "threads.sqlite"))
    app = create_app(graph.recompile(checkpointer=checkpointer), graph_id=GRAPH_ID)
    app.state.context.on_shutdown.append(checkpointer.aclose)
    with served(app) as url:
        sync = get_sync_client(url=url, api_key=None)
        yield sync
        sync.close()


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _pause(client: Any, text: str) -> tuple[str, dict[str, Any]]:
    """Start a run that asks to delete; the interrupt value its stream showed."""
    thread_id = client.threads.create()["thread_id"]
    parts = client.runs.stream(thread_id, GRAPH_ID, input=_user(text), stream_mode="updates")
    paused = [p.data for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    assert len(paused) == 1, paused
    value = paused[0]["__interrupt__"][0]["value"]
    assert value["type"] == "tool_approval"
    assert value["description"] == "Delete this file?"
    [call] = value["calls"]
    assert call["name"] == "delete_file"
    state = client.threads.get_state(thread_id)
    assert state["interrupts"][0]["value"] == value
    assert client.threads.get(thread_id)["status"] == "interrupted"
    return thread_id, call


def _tool_messages(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in values["messages"] if m["type"] == "tool"]


def test_approve(client: Any) -> None:
    thread_id, call = _pause(client, "delete notes.txt")
    assert call["args"] == {"path": "notes.txt"}
    values = client.runs.wait(
        thread_id, GRAPH_ID, command={"resume": {"decisions": [{"type": "approve"}]}}
    )
    assert values["messages"][-1]["content"] == "delete_file said: deleted notes.txt"
    assert client.threads.get(thread_id)["status"] == "idle"


def test_edit(client: Any) -> None:
    thread_id, call = _pause(client, "delete important.txt")
    edit = {"type": "edit", "call_id": call["id"], "args": {"path": "scratch.txt"}}
    values = client.runs.wait(thread_id, GRAPH_ID, command={"resume": {"decisions": [edit]}})
    [result] = _tool_messages(values)
    assert result["content"] == "deleted scratch.txt"
    [asked] = [m for m in values["messages"] if m["type"] == "ai" and m.get("tool_calls")]
    assert asked["tool_calls"][0]["args"] == {"path": "scratch.txt"}


def test_reject(client: Any) -> None:
    thread_id, _ = _pause(client, "delete thesis.tex")
    reject = {"type": "reject", "message": "I still need it"}
    values = client.runs.wait(thread_id, GRAPH_ID, command={"resume": {"decisions": [reject]}})
    [result] = _tool_messages(values)
    assert result["status"] == "error"
    assert "I still need it" in result["content"]
    assert "I still need it" in values["messages"][-1]["content"]


def test_a_bad_answer_pauses_again_with_the_problem(client: Any) -> None:
    thread_id, _ = _pause(client, "delete x.txt")
    client.runs.wait(thread_id, GRAPH_ID, command={"resume": {"decisions": [{"type": "maybe"}]}})
    state = client.threads.get_state(thread_id)
    assert "'type' must be one of" in state["interrupts"][0]["value"]["error"]
    values = client.runs.wait(thread_id, GRAPH_ID, command={"resume": "approve"})
    assert values["messages"][-1]["content"] == "delete_file said: deleted x.txt"
