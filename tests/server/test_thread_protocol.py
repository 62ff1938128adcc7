"""LangGraph's thread-streaming protocol: ``POST /threads/{id}/commands`` and event streams.

Driven with plain HTTP against a real server on SQLite and on Postgres +
Redis; the SDKs' own ``threads.stream`` is checked by the harness
(``tests/clients/langgraph``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.clients.langgraph.graph import build
from tests.server.conftest import BACKENDS, Serve

ALL = ["values", "updates", "messages", "tools", "lifecycle", "input"]
TERMINAL = {"completed", "failed", "interrupted"}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture
def client(serve: Serve) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(build), timeout=60) as client:
        yield client


@pytest.fixture(params=BACKENDS)
def any_client(serve: Serve, request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(build, backend=request.param), timeout=60) as client:
        yield client


def command(client: httpx.Client, thread_id: str, method: str, **params: Any) -> dict[str, Any]:
    answer = client.post(
        f"/threads/{thread_id}/commands", json={"id": 7, "method": method, "params": params}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["id"] == 7, body
    return body


def ok(client: httpx.Client, thread_id: str, method: str, **params: Any) -> Any:
    body = command(client, thread_id, method, **params)
    assert body["type"] == "success", body
    return body["result"]


def run_events(
    client: httpx.Client, thread_id: str, channels: list[str] = ALL, **body: Any
) -> list[dict[str, Any]]:
    """The events of one run from a new event stream, up to its terminal lifecycle event."""
    seen: list[dict[str, Any]] = []
    path = f"/threads/{thread_id}/stream/events"
    with client.stream("POST", path, json={"channels": channels, **body}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line.removeprefix("data: "))
            seen.append(event)
            if event["method"] == "lifecycle" and event["params"]["data"]["event"] in TERMINAL:
                return seen
    raise AssertionError(f"the stream ended before the run did: {seen}")


def of(events: list[dict[str, Any]], method: str) -> list[Any]:
    return [e["params"]["data"] for e in events if e["method"] == method]


def test_a_run_started_by_command_streams_its_channels(any_client: httpx.Client) -> None:
    client, thread_id = any_client, str(uuid.uuid4())  # a thread run.start creates
    result = ok(client, thread_id, "run.start", assistant_id="agent", input=user("hi"))
    assert result["run_id"]
    events = run_events(client, thread_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len({e["event_id"] for e in events}) == len(events)
    assert all(e["type"] == "event" and e["params"]["namespace"] == [] for e in events)
    lifecycle = [d["event"] for d in of(events, "lifecycle")]
    assert lifecycle == ["started", "completed"]
    final = of(events, "values")[-1]
    assert [m["type"] for m in final["messages"]] == ["human", "ai"]
    messages = of(events, "messages")
    kinds = [d["event"] for d in messages]
    assert kinds[0] == "message-start" and kinds[-1] == "message-finish"
    assert kinds.count("message-start") == kinds.count("message-finish") == 1  # chunks, then whole
    deltas = "".join(d["delta"]["text"] for d in messages if d["event"] == "content-block-delta")
    assert deltas.startswith("said: hi w0") and "w9" in deltas
    finished = [d["content"]["text"] for d in messages if d["event"] == "content-block-finish"]
    assert finished == [final["messages"][1]["content"]]
    assert {d["node"] for d in of(events, "updates")} >= {"agent"}


def test_tools_and_a_filter(client: httpx.Client) -> None:
    thread_id = str(uuid.uuid4())
    ok(client, thread_id, "run.start", assistant_id="agent", input=user("tool"))
    tools = run_events(client, thread_id, ["tools", "lifecycle"])
    assert {e["method"] for e in tools} == {"tools", "lifecycle"}
    started, finished = of(tools, "tools")
    assert started["event"] == "tool-started" and started["tool_name"] == "add"
    assert started["input"] == {"a": 2, "b": 3}
    assert finished == {
        "event": "tool-finished",
        "tool_call_id": started["tool_call_id"],
        "output": "5",
    }
    said = run_events(client, thread_id, ["messages", "lifecycle"])
    starts = [d for d in of(said, "messages") if d["event"] == "message-start"]
    assert [d["role"] for d in starts] == ["ai", "ai"]  # the call, the answer; results are tools'
    texts = [d["content"] for d in of(said, "messages") if d["event"] == "content-block-finish"]
    assert texts[0]["type"] == "tool_call" and texts[-1] == {"type": "text", "text": "add says 5"}
    again = run_events(client, thread_id, ["tools", "lifecycle"], since=2)
    assert [e["seq"] for e in again] == [3, 4]  # ``since`` skips what the client had


def test_interrupt_and_respond(any_client: httpx.Client) -> None:
    client, thread_id = any_client, str(uuid.uuid4())
    ok(client, thread_id, "run.start", assistant_id="agent", input=user("ask"))
    events = run_events(client, thread_id)
    assert of(events, "lifecycle")[-1]["event"] == "interrupted"
    (asked,) = of(events, "input.requested")
    assert asked["payload"] == asked["value"] == {"question": "your name?"}
    assert all("__interrupt__" not in values for values in of(events, "values"))
    wrong = command(client, thread_id, "input.respond", interrupt_id="nope", response="x")
    assert wrong["type"] == "error" and wrong["error"] == "no_such_interrupt", wrong
    params = {"namespace": [], "interrupt_id": asked["interrupt_id"], "response": "Ada"}
    assert ok(client, thread_id, "input.respond", **params) == {}
    resumed = run_events(client, thread_id)
    assert of(resumed, "lifecycle")[-1]["event"] == "completed"
    assert of(resumed, "values")[-1]["messages"][-1]["content"] == "you answered: Ada"
    ok(client, thread_id, "run.start", assistant_id="agent", input=user("ask"))
    run_events(client, thread_id, ["lifecycle"])
    ok(client, thread_id, "run.start", assistant_id="agent", input="Bo")  # answers the pause
    again = run_events(client, thread_id)
    assert of(again, "values")[-1]["messages"][-1]["content"] == "you answered: Bo"


def test_state_commands_and_fork(client: httpx.Client) -> None:
    thread_id = str(uuid.uuid4())
    ok(client, thread_id, "run.start", assistant_id="agent", input=user("one"))
    run_events(client, thread_id, ["lifecycle"])
    state = ok(client, thread_id, "state.get", namespace=[], keys=["messages"])
    assert list(state["values"]) == ["messages"] and len(state["values"]["messages"]) == 2
    listed = ok(client, thread_id, "state.listCheckpoints", limit=100)["checkpoints"]
    assert listed[0]["id"] == state["checkpoint"]["id"]
    assert {"id", "timestamp", "step", "node_name", "metadata"} <= set(listed[0])
    first = listed[-1]["id"]
    forked = ok(client, thread_id, "state.fork", checkpoint_id=first, input=user("two"))
    assert forked["thread_id"] == thread_id
    run_events(client, thread_id, ["lifecycle"])
    after = ok(client, thread_id, "state.get", namespace=[])["values"]["messages"]
    assert after[0]["content"] == "two"  # the branch from the first checkpoint
    tree = ok(client, thread_id, "agent.getTree")["tree"]
    assert tree == {"namespace": [], "status": "completed", "graph_name": "agent"}


def test_a_run_started_by_command_can_use_an_assistant_preset(client: httpx.Client) -> None:
    preset = {"graph_id": "agent", "assistant_id": "polite", "metadata": {"tone": "polite"}}
    assert client.post("/assistants", json=preset).status_code == 200
    thread_id = str(uuid.uuid4())
    started = ok(client, thread_id, "run.start", assistant_id="polite", input=user("hi"))
    events = run_events(client, thread_id, ["lifecycle"])
    assert of(events, "lifecycle")[-1]["event"] == "completed"
    run = client.get(f"/threads/{thread_id}/runs/{started['run_id']}").json()
    assert run["assistant_id"] == "polite"


def test_refused_and_unknown_commands_say_so(client: httpx.Client) -> None:
    thread_id = str(uuid.uuid4())
    unknown = command(client, thread_id, "run.teleport")
    assert unknown["error"] == "unknown_command" and "run.start" in unknown["message"]
    inject = command(client, thread_id, "input.inject", namespace=[], message={})
    assert inject["error"] == "not_supported" and "run.start" in inject["message"]
    other = command(client, thread_id, "run.start", assistant_id="other", input=user("hi"))
    assert other["error"] == "invalid_argument" and "'other'" in other["message"]
    bad = command(client, thread_id, "run.start", assistant_id="agent", input={"nope": 1})
    assert bad["error"] == "invalid_argument" and "nope" in bad["message"]
    missing = command(client, thread_id, "state.get", namespace=[])
    assert missing["error"] == "invalid_argument" and thread_id in missing["message"]
    goto = command(client, thread_id, "input.respond", interrupt_id="i", response=1, goto="x")
    assert goto["type"] == "error"


def test_bad_event_streams_are_4xx(client: httpx.Client) -> None:
    missing = client.post(f"/threads/{uuid.uuid4()}/stream/events", json={"channels": ["values"]})
    assert missing.status_code == 404, missing.text
    thread_id = client.post("/threads", json={}).json()["thread_id"]
    path = f"/threads/{thread_id}/stream/events"
    assert client.post(path, json={"channels": ["nope"]}).status_code == 422
    assert client.post(path, json={"channels": []}).status_code == 422
    assert client.post(f"/threads/{thread_id}/commands", json={"method": 1}).status_code == 422
