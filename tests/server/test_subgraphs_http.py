"""A served graph with subgraphs: their schemas, ``stream_subgraphs``, a pause inside resumed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.storage.checkpointer import Checkpointer
from tenxgraph.utils.constants import START
from tests.core.graph.test_subgraphs import ASKING, Report, nested_app, parallel_app
from tests.server.conftest import Serve
from tests.server.test_langgraph_routes import events, thread

RUN = {"assistant_id": "agent"}


def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    return nested_app(checkpointer)  # type: ignore[no-any-return]


@pytest.fixture
def client(serve: Serve) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(build), timeout=60) as client:
        yield client


def test_the_assistant_lists_its_subgraphs_schemas(client: httpx.Client) -> None:
    top = client.get("/assistants/agent/subgraphs")
    assert top.status_code == 200, top.text
    assert list(top.json()) == ["middle"]
    assert "notes" in top.json()["middle"]["state_schema"]["properties"]
    every = client.get("/assistants/agent/subgraphs", params={"recurse": "true"}).json()
    assert list(every) == ["middle", "middle|inner"]
    under = client.get("/assistants/agent/subgraphs", params={"namespace": "middle|inner"})
    assert list(under.json()) == ["middle|inner"]


def test_stream_subgraphs_names_the_namespace_and_a_resume_reaches_the_inner_graph(
    client: httpx.Client,
) -> None:
    thread_id = thread(client)
    body = {
        **RUN,
        "input": {"messages": [{"role": "user", "content": "go"}]},
        "stream_mode": ["updates"],
        "stream_subgraphs": True,
    }
    with client.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
        assert response.status_code == 200
        names = [e["event"] for e in events(response) if e["event"].startswith("updates")]
    assert names[:3] == ["updates", "updates|middle", "updates|middle|inner"]  # then the pause
    state = client.get(f"/threads/{thread_id}/state").json()
    assert state["next"] == ["middle"]
    resumed = client.post(
        f"/threads/{thread_id}/runs/wait", json={**RUN, "command": {"resume": "yes"}}
    )
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["notes"] == ["outer", "middle", "inner:yes"]
    plain = {**body, "stream_subgraphs": False}
    with client.stream("POST", "/runs/stream", json=plain) as response:
        names = [e["event"] for e in events(response)]
    assert not any("|" in name for name in names)


def test_a_paused_subgraph_shows_in_the_threads_state(client: httpx.Client) -> None:
    thread_id = thread(client)
    body = {**RUN, "input": {"messages": [{"role": "user", "content": "go"}]}}
    assert client.post(f"/threads/{thread_id}/runs/wait", json=body).status_code == 200
    plain = client.get(f"/threads/{thread_id}/state").json()
    (task,) = plain["tasks"]
    assert task["name"] == "middle" and task["state"] is None
    assert task["checkpoint"] == {"thread_id": thread_id, "checkpoint_ns": "middle"}
    nested = client.get(f"/threads/{thread_id}/state", params={"subgraphs": "true"}).json()
    middle = nested["tasks"][0]["state"]
    assert middle["checkpoint"]["checkpoint_ns"] == "middle"
    assert middle["values"]["notes"] == ["outer", "middle"] and middle["next"] == ["inner"]
    inner = middle["tasks"][0]["state"]
    assert inner["checkpoint"]["checkpoint_ns"] == "middle|inner"
    assert inner["next"] == ["ask"]
    assert inner["interrupts"][0]["value"] == {"question": "approve?"}


def test_next_names_the_unfinished_tasks_of_a_parallel_step(serve: Serve) -> None:
    with httpx.Client(base_url=serve(parallel_app), timeout=60) as client:
        thread_id = thread(client)
        body = {**RUN, "input": {"messages": [{"role": "user", "content": "go"}]}}
        assert client.post(f"/threads/{thread_id}/runs/wait", json=body).status_code == 200
        state = client.get(f"/threads/{thread_id}/state").json()
        assert state["next"] == ["left"]  # right finished; left's subgraph is paused
        assert state["tasks"][0]["checkpoint"]["checkpoint_ns"] == "left:0"


def test_checkpoint_ns_reads_a_paused_subgraph_it_names(client: httpx.Client) -> None:
    thread_id = thread(client)
    url = f"/threads/{thread_id}/state/checkpoint"
    nowhere = client.post(url, json={"checkpoint": {"checkpoint_ns": "middle"}})
    assert nowhere.status_code == 404, nowhere.text  # nothing paused there yet
    body = {**RUN, "input": {"messages": [{"role": "user", "content": "go"}]}}
    assert client.post(f"/threads/{thread_id}/runs/wait", json=body).status_code == 200
    inner = client.post(url, json={"checkpoint": {"checkpoint_ns": "middle|inner"}})
    assert inner.status_code == 200, inner.text
    assert inner.json()["next"] == ["ask"]
    assert inner.json()["checkpoint"]["checkpoint_ns"] == "middle|inner"
    unknown = client.post(url, json={"checkpoint": {"checkpoint_ns": "elsewhere"}})
    assert unknown.status_code == 422, unknown.text
    run = {**body, "checkpoint": {"checkpoint_ns": "middle"}}
    refused = client.post(f"/threads/{thread_id}/runs/wait", json=run)
    assert refused.status_code == 422 and "top of the thread" in refused.text


def test_the_graph_marks_joins_and_xray_shows_the_subgraphs(serve: Serve) -> None:
    with httpx.Client(base_url=serve(parallel_app), timeout=60) as client:
        drawn = client.get("/assistants/agent/graph").json()
        joins = [e for e in drawn["edges"] if e["target"] == "join"]
        assert joins == [
            {"source": "left", "target": "join", "conditional": False, "data": "join left + right"},
            {
                "source": "right",
                "target": "join",
                "conditional": False,
                "data": "join left + right",
            },
        ]
        assert "left:ask" not in [n["id"] for n in drawn["nodes"]]
        xray = client.get("/assistants/agent/graph", params={"xray": "true"}).json()
        assert {"left", "left:ask", "left:__start__"} <= {n["id"] for n in xray["nodes"]}
        assert {"source": "left:__start__", "target": "left:ask", "conditional": False} in xray[
            "edges"
        ]


def test_stream_subgraphs_sends_each_subgraph_steps_values(client: httpx.Client) -> None:
    thread_id = thread(client)
    body = {
        **RUN,
        "input": {"messages": [{"role": "user", "content": "go"}]},
        "stream_mode": ["values"],
        "stream_subgraphs": True,
    }
    with client.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
        assert response.status_code == 200
        sent = [(e["event"], e["data"]) for e in events(response) if "values" in e["event"]]
    nested = [(name, data) for name, data in sent if "|" in name]
    assert [name for name, _ in nested] == ["values|middle", "values|middle|inner"]
    assert nested[0][1]["notes"] == ["outer", "middle"]  # the middle graph after its "pre"
    inner = nested[1][1]
    assert inner["messages"][-1]["content"][0]["text"] == "inner says hi"
    plain = {**body, "stream_subgraphs": False}
    with client.stream("POST", f"/threads/{thread(client)}/runs/stream", json=plain) as response:
        assert not any("|" in e["event"] for e in events(response))


def delegating(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """A node that invokes a graph itself (``ASKING``), served."""

    def delegate(state: Report) -> dict[str, Any]:
        found = ASKING.invoke({"state": {"query": state.question}})
        return {"summary": ", ".join(found["state"].findings)}

    graph = StateGraph(Report)
    graph.add_node("delegate", delegate)
    graph.add_edge(START, "delegate")
    return graph.compile(checkpointer)


def test_a_graph_a_node_invokes_streams_and_shows_under_the_nodes_namespace(
    serve: Serve,
) -> None:
    with httpx.Client(base_url=serve(delegating), timeout=60) as client:
        thread_id = thread(client)
        body = {**RUN, "input": {"question": "docs"}}
        assert client.post(f"/threads/{thread_id}/runs/wait", json=body).status_code == 200
        resume = {
            **RUN,
            "command": {"resume": "a"},
            "stream_mode": ["updates", "values"],
            "stream_subgraphs": True,
        }
        url = f"/threads/{thread_id}/runs/stream"
        with client.stream("POST", url, json=resume) as response:
            sent = [(e["event"], e["data"]) for e in events(response) if "|" in e["event"]]
        assert [name for name, _ in sent] == ["updates|delegate", "values|delegate"]
        assert sent[1][1]["findings"] == ["a"] and sent[1][1]["query"] == "docs"
        state = client.get(f"/threads/{thread_id}/state", params={"subgraphs": "true"}).json()
        called = state["tasks"][0]["state"]
        assert called["values"]["query"] == "docs" and called["next"] == ["more"]


def test_a_graph_a_node_runs_is_listed_and_its_pause_read_by_namespace(serve: Serve) -> None:
    with httpx.Client(base_url=serve(delegating), timeout=60) as client:
        listed = client.get("/assistants/agent/subgraphs").json()
        assert list(listed) == ["delegate"]
        assert "findings" in listed["delegate"]["state_schema"]["properties"]
        thread_id = thread(client)
        body = {**RUN, "input": {"question": "docs"}}
        assert client.post(f"/threads/{thread_id}/runs/wait", json=body).status_code == 200
        url = f"/threads/{thread_id}/state/checkpoint"
        inner = client.post(url, json={"checkpoint": {"checkpoint_ns": "delegate"}})
        assert inner.status_code == 200, inner.text
        assert inner.json()["next"] == ["ask"]
        assert inner.json()["values"]["query"] == "docs"
