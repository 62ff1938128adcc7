"""Run streams over real HTTP: numbered events in order, resumed with ``Last-Event-ID``.

The SSE parsing here is written out (not a client library's), so the tests
check the bytes a browser or any SSE client reads.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server.conftest import BACKENDS, Serve, message_text
from tests.server.test_runs import AGENT, slow_graph, user_input, wait_status


def sse(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Each event of an SSE response: ``{"event", "id", "data"}`` (data parsed as JSON)."""
    event: dict[str, Any] = {}
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data:
                yield {**event, "data": json.loads("\n".join(data))}
            event, data = {}, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            else:
                event[field] = value


def body(text: str, *modes: str, **extra: Any) -> dict[str, Any]:
    return {
        "assistant_id": AGENT,
        "input": user_input(text),
        "stream_mode": list(modes) or ["updates"],
        "if_not_exists": "create",
        **extra,
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stream_sends_numbered_events_in_order(serve: Serve, backend: str) -> None:
    url = serve(slow_graph(0.01, 3), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        request = body("go", "updates", "values", "messages-tuple")
        with client.stream("POST", "/threads/s1/runs/stream", json=request) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            location = response.headers["location"]
            events = list(sse(response))
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    assert events[0]["event"] == "metadata"
    run_id = events[0]["data"]["run_id"]
    assert location == f"/threads/s1/runs/{run_id}/stream"
    assert events[-1] == {"event": "end", "id": str(len(events)), "data": None}
    updates = [e["data"] for e in events if e["event"] == "updates"]
    assert [next(iter(u)) for u in updates] == ["s0", "s1", "s2"]
    assert message_text(updates[1]["s1"]["messages"][0]) == "s1 after s0 after go"
    messages = [e["data"] for e in events if e["event"] == "messages"]
    assert [m[1]["langgraph_node"] for m in messages] == ["s0", "s1", "s2"]
    assert [m[0]["type"] for m in messages] == ["ai", "ai", "ai"]  # LangChain's format
    values = [e["data"] for e in events if e["event"] == "values"]
    assert [len(v["messages"]) for v in values] == [2, 3, 4]  # after each step
    assert [message_text(m) for m in values[-1]["messages"]][-1] == "s2 after s1 after s0 after go"
    with httpx.Client(base_url=url, timeout=30) as client:  # the same run in tenxgraph's format
        own = client.get(location, headers={"x-message-format": "tenxgraph"})
    own_values = [e["data"] for e in sse(own) if e["event"] == "values"]
    roles = [m["role"] for m in own_values[-1]["messages"]]
    assert roles == ["user", "assistant", "assistant", "assistant"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reconnect_with_last_event_id_gets_the_rest_exactly_once(
    serve: Serve, backend: str
) -> None:
    url = serve(slow_graph(0.1, 6), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        first: list[dict[str, Any]] = []
        with client.stream("POST", "/threads/s2/runs/stream", json=body("go")) as response:
            for event in sse(response):
                first.append(event)
                if event["event"] == "updates":
                    break  # the connection drops after the first step
        run_id = first[0]["data"]["run_id"]
        assert wait_status(client, "s2", run_id, "running", "success")["status"] == "running"
        path = f"/threads/s2/runs/{run_id}/stream"
        headers = {"Last-Event-ID": first[-1]["id"]}
        with client.stream("GET", path, headers=headers) as response:
            rest = list(sse(response))
        with client.stream("GET", path) as response:
            whole = list(sse(response))  # the run ended: its whole stream from the start
    assert first + rest == whole
    ids = [int(e["id"]) for e in first + rest]
    assert ids == list(range(1, len(ids) + 1))
    steps = [next(iter(e["data"])) for e in whole if e["event"] == "updates"]
    assert steps == ["s0", "s1", "s2", "s3", "s4", "s5"]
    assert rest[-1]["event"] == "end"


def test_a_joined_stream_follows_a_background_run_live(serve: Serve) -> None:
    url = serve(slow_graph(0.1, 4))
    with httpx.Client(base_url=url, timeout=30) as client:
        run = client.post("/threads/s3/runs", json=body("go")).json()
        with client.stream("GET", f"/threads/s3/runs/{run['run_id']}/stream") as response:
            events = list(sse(response))
            status = client.get(f"/threads/s3/runs/{run['run_id']}").json()["status"]
    assert status == "success"
    assert [e["event"] for e in events] == ["metadata"] + ["updates"] * 4 + ["end"]


def test_a_client_gone_cancels_the_run_when_it_asked_to(serve: Serve) -> None:
    url = serve(slow_graph(0.2, 8))
    with httpx.Client(base_url=url, timeout=30) as client:
        request = body("go", on_disconnect="cancel")
        with client.stream("POST", "/threads/s4/runs/stream", json=request) as response:
            events = sse(response)
            run_id = next(events)["data"]["run_id"]
            next(events)  # the first step's update
        run = wait_status(client, "s4", run_id, "interrupted", "success")
        assert run["status"] == "interrupted"


def test_join_stream_filters_by_mode_and_refuses_bad_ids(serve: Serve) -> None:
    url = serve(slow_graph(0.0, 2))
    with httpx.Client(base_url=url, timeout=30) as client:
        request = body("go", "updates", "values")
        with client.stream("POST", "/threads/s5/runs/stream", json=request) as response:
            run_id = next(sse(response))["data"]["run_id"]
        path = f"/threads/s5/runs/{run_id}/stream"
        client.get(f"/threads/s5/runs/{run_id}/join")
        with client.stream("GET", path, params={"stream_mode": "updates"}) as response:
            kinds = [e["event"] for e in sse(response)]
        assert kinds == ["metadata", "updates", "updates", "end"]
        bad = client.get(path, headers={"Last-Event-ID": "abc"})
        assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["detail"]
        unknown = client.get(path, params={"stream_mode": "diff"})
        assert unknown.status_code == 422


def test_events_past_the_bound_are_dropped_and_a_resume_before_them_is_refused(
    serve: Serve,
) -> None:
    url = serve(slow_graph(0.0, 6), extra_settings={"runs": {"max_events": 4}})
    with httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/threads/s6/runs/wait", json=body("go"))
        run_path = answer.headers["content-location"]
        gone = client.get(f"{run_path}/stream", headers={"Last-Event-ID": "1"})
        assert gone.status_code == 410
        assert "keeps events from" in gone.json()["detail"]
        with client.stream("GET", f"{run_path}/stream", headers={"Last-Event-ID": "5"}) as kept:
            events = list(sse(kept))
        assert [int(e["id"]) for e in events] == [6, 7, 8]  # six updates, metadata, end
        assert events[-1]["event"] == "end"


def test_messages_mode_sends_partials_that_grow_then_the_complete_message(serve: Serve) -> None:
    url = serve()  # conftest's agent: a model that streams "echo: <text>" in chunks
    with httpx.Client(base_url=url, timeout=30) as client:
        request = body("hello there", "messages", "messages-tuple")
        with client.stream("POST", "/threads/s7/runs/stream", json=request) as response:
            events = list(sse(response))
    kinds = [e["event"] for e in events]
    partials = [message_text(e["data"][0]) for e in events if e["event"] == "messages/partial"]
    assert {e["data"][0]["type"] for e in events if e["event"] == "messages/partial"} == {
        "AIMessageChunk"
    }
    assert len(partials) > 1
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(partials))
    assert kinds.index("messages/metadata") < kinds.index("messages/partial")
    [complete] = [e["data"][0] for e in events if e["event"] == "messages/complete"]
    assert (complete["type"], message_text(complete)) == ("ai", partials[-1])
    chunks = [e["data"][0] for e in events if e["event"] == "messages"]
    chunks = [c for c in chunks if c["type"] == "AIMessageChunk"]
    assert "".join(message_text(c) for c in chunks) == partials[-1]
