"""The official ``langgraph-sdk`` client against a real server: threads, runs, streams, resume."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.server.conftest import BACKENDS, Serve, make_graph, message_text
from tests.server.test_runs import AGENT, asking_graph, slow_graph, texts


@pytest.fixture
def sdk(serve: Serve) -> Iterator[Any]:
    """``sdk(graph, backend=...)``: a langgraph-sdk sync client of a new server."""
    clients: list[Any] = []

    def make(graph: Any, **options: Any) -> Any:
        client = get_sync_client(url=serve(graph, **options), api_key=None)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_sdk_streams_a_run_and_resumes_an_interrupt(sdk: Any, backend: str) -> None:
    client = sdk(asking_graph, backend=backend)
    thread = client.threads.create()
    thread_id = thread["thread_id"]
    parts = list(
        client.runs.stream(
            thread_id,
            AGENT,
            input={"messages": [{"role": "user", "content": "hi"}]},
            stream_mode=["values", "updates"],
        )
    )
    kinds = [part.event for part in parts]
    assert kinds[0] == "metadata" and kinds[-1] == "end"
    paused = [p.data for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    question = paused[0]["__interrupt__"][0]
    assert question["value"] == {"question": "your name?"}
    state = client.threads.get_state(thread_id)
    assert state["next"] == ["ask"]
    assert state["interrupts"][0]["id"] == question["id"]  # the same id as the thread's
    assert client.threads.get(thread_id)["status"] == "interrupted"
    resumed = list(
        client.runs.stream(thread_id, AGENT, command={"resume": "Ada"}, stream_mode="values")
    )
    final = [p.data for p in resumed if p.event == "values"][-1]
    assert texts(final) == ["hi", "hello Ada"]
    assert texts(client.threads.get_state(thread_id)["values"]) == ["hi", "hello Ada"]


def test_sdk_background_run_join_list_and_wait(sdk: Any) -> None:
    client = sdk(slow_graph(0.05, 2))
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, AGENT, input={"messages": [("user", "go")]})
    assert run["thread_id"] == thread_id and run["status"] in ("pending", "running")
    values = client.runs.join(thread_id, run["run_id"])
    assert texts(values) == ["go", "s0 after go", "s1 after s0 after go"]
    assert client.runs.get(thread_id, run["run_id"])["status"] == "success"
    assert [r["run_id"] for r in client.runs.list(thread_id)] == [run["run_id"]]
    waited = client.runs.wait(thread_id, AGENT, input={"messages": [("user", "more")]})
    assert texts(waited)[-3] == "more"
    stateless = client.runs.wait(None, AGENT, input={"messages": [("user", "alone")]})
    assert texts(stateless) == ["alone", "s0 after alone", "s1 after s0 after alone"]
    with pytest.raises(NotFoundError):
        client.runs.get(thread_id, "no-such-run")


def test_sdk_cancel_join_stream_and_reject(sdk: Any) -> None:
    client = sdk(slow_graph(0.2, 5))
    thread_id = client.threads.create()["thread_id"]
    run = client.runs.create(thread_id, AGENT, input={"messages": [("user", "go")]})
    with pytest.raises(ConflictError):
        client.runs.create(
            thread_id, AGENT, input={"messages": [("user", "no")]}, multitask_strategy="reject"
        )
    seen = []
    for part in client.runs.join_stream(thread_id, run["run_id"]):
        seen.append(part)
        if part.event == "values":
            break
    client.runs.cancel(thread_id, run["run_id"], wait=True)
    assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    rest = list(client.runs.join_stream(thread_id, run["run_id"], last_event_id=seen[-1].id))
    assert [int(p.id) for p in seen + rest] == list(range(1, len(seen) + len(rest) + 1))
    assert rest[-1].event == "end"


def test_sdk_stateless_stream(sdk: Any) -> None:
    client = sdk(slow_graph(0.0, 2))
    created: list[Any] = []
    parts = list(
        client.runs.stream(
            None,
            AGENT,
            input={"messages": [{"type": "human", "content": "hey"}]},
            stream_mode="messages-tuple",
            on_run_created=created.append,
        )
    )
    messages = [p.data for p in parts if p.event == "messages"]
    assert [message_text(m[0]) for m in messages] == [
        "s0 after hey",
        "s1 after s0 after hey",
    ]
    assert created and created[0]["run_id"] == parts[0].data["run_id"]


def test_sdk_cancel_many_stops_the_threads_runs(sdk: Any) -> None:
    client = sdk(slow_graph(0.1, 5))
    thread_id = client.threads.create()["thread_id"]
    other = client.threads.create()["thread_id"]
    text = {"messages": [("user", "go")]}
    first = client.runs.create(thread_id, AGENT, input=text)
    queued = client.runs.create(thread_id, AGENT, input=text, multitask_strategy="enqueue")
    elsewhere = client.runs.create(other, AGENT, input=text)
    client.runs.cancel_many(thread_id=thread_id)
    for run in (first, queued):
        client.runs.join(thread_id, run["run_id"])
        assert client.runs.get(thread_id, run["run_id"])["status"] == "interrupted"
    client.runs.join(other, elsewhere["run_id"])
    assert client.runs.get(other, elsewhere["run_id"])["status"] == "success"


def test_sdk_waits_for_the_default_agent_answer(sdk: Any) -> None:
    client = sdk(make_graph)
    thread_id = client.threads.create()["thread_id"]
    values = client.runs.wait(thread_id, AGENT, input={"messages": [("user", "hi")]})
    assert texts(values) == ["hi", "echo: hi"]
