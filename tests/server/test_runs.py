"""Runs over real HTTP: background runs, join, wait, cancel, the thread-busy strategies, bad input.

Each test starts uvicorn (the ``serve`` fixture of conftest.py) over SQLite;
the main ones run on Postgres + Redis too. Graphs here are slow on purpose
(async nodes that sleep) so a second run really finds the thread busy.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph, interrupt
from tenxgraph.core.state import AgentState, Message
from tenxgraph.server.auth import api_keys
from tenxgraph.storage.checkpointer import Checkpointer
from tests.server.conftest import BACKENDS, Serve, message_text

AGENT = "agent"


def slow_graph(delay: float = 0.2, steps: int = 4, slow_on: str | None = None) -> Any:
    """A graph of ``steps`` async nodes that each sleep ``delay`` s and add one message.

    With ``slow_on``, only turns whose user message is that text are slow.
    """

    def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
        graph = StateGraph(AgentState)
        names = [f"s{i}" for i in range(steps)]
        for name in names:
            graph.add_node(name, _sleeper(name, delay, slow_on))
        graph.set_entry_point(names[0])
        for first, second in itertools.pairwise(names):
            graph.add_edge(first, second)
        return graph.compile(checkpointer, busy_timeout=10)

    return build


def _sleeper(name: str, delay: float, slow_on: str | None) -> Any:
    async def node(state: AgentState) -> Message:
        said = [m.text() for m in state.context if m.role == "user"]
        if slow_on is None or (said and said[-1] == slow_on):
            await asyncio.sleep(delay)
        last = state.context[-1].text() if state.context else ""
        return Message.text_message(f"{name} after {last}", role="assistant")

    return node


def asking_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """Asks a question through ``interrupt`` and answers with what the human said."""

    def ask(state: AgentState) -> Message:
        answer = interrupt({"question": "your name?"})
        return Message.text_message(f"hello {answer}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("ask", ask)
    graph.set_entry_point("ask")
    return graph.compile(checkpointer)


def user_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def texts(values: dict[str, Any]) -> list[str]:
    """The texts of a state's context window, as the server sends it (LangChain's format)."""
    return [message_text(message) for message in values["messages"]]


def wait_steps(client: httpx.Client, thread_id: str, messages: int) -> None:
    """Wait until the thread's saved state holds ``messages`` messages (steps have run)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        state = client.get(f"/threads/{thread_id}/state")
        if state.status_code == 200 and len(state.json()["values"]["messages"]) >= messages:
            return
        time.sleep(0.02)
    raise AssertionError(f"thread {thread_id} never held {messages} messages")


def wait_status(client: httpx.Client, thread_id: str, run_id: str, *statuses: str) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run = client.get(f"/threads/{thread_id}/runs/{run_id}").json()
        if run["status"] in statuses:
            return dict(run)
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {statuses}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_background_run_then_join_returns_the_final_values(serve: Serve, backend: str) -> None:
    url = serve(slow_graph(0.05, 2), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("go"), "if_not_exists": "create"}
        created = client.post("/threads/t1/runs", json=body)
        assert created.status_code == 200, created.text
        run = created.json()
        assert run["status"] in ("pending", "running")
        assert created.headers["content-location"] == f"/threads/t1/runs/{run['run_id']}"
        joined = client.get(f"/threads/t1/runs/{run['run_id']}/join")
        assert joined.status_code == 200
        assert texts(joined.json()) == ["go", "s0 after go", "s1 after s0 after go"]
        done = client.get(f"/threads/t1/runs/{run['run_id']}").json()
        assert done["status"] == "success"
        listed = client.get("/threads/t1/runs").json()
        assert [r["run_id"] for r in listed] == [run["run_id"]]


def test_a_thread_id_outside_latin_1_is_percent_encoded_in_the_headers(serve: Serve) -> None:
    url = serve(slow_graph(0.0, 1))
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("go"), "if_not_exists": "create"}
        created = client.post("/threads/🙂 x/runs", json=body)
        assert created.status_code == 200, created.text
        run_id = created.json()["run_id"]
        location = created.headers["content-location"]
        assert location == f"/threads/%F0%9F%99%82%20x/runs/{run_id}"
        assert created.headers["location"] == f"{location}/stream"
        joined = client.get(f"{location}/join")  # the header is a path that works as it is
        assert joined.status_code == 200, joined.text
        assert texts(joined.json()) == ["go", "s0 after go"]
        assert [r["run_id"] for r in client.get("/threads/🙂 x/runs").json()] == [run_id]


def test_wait_answers_with_the_values_and_a_second_run_continues_the_thread(
    serve: Serve,
) -> None:
    url = serve(slow_graph(0.0, 1))
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("a"), "if_not_exists": "create"}
        first = client.post("/threads/t2/runs/wait", json=body)
        assert first.status_code == 200, first.text
        body["input"] = user_input("b")
        second = client.post("/threads/t2/runs/wait", json=body).json()
        assert texts(second) == ["a", "s0 after a", "b", "s0 after b"]


def test_stateless_wait_deletes_its_thread_unless_kept(serve: Serve) -> None:
    url = serve(slow_graph(0.0, 1))
    with httpx.Client(base_url=url, timeout=30) as client:
        gone = client.post("/runs/wait", json={"assistant_id": AGENT, "input": user_input("x")})
        assert gone.status_code == 200
        assert texts(gone.json()) == ["x", "s0 after x"]
        thread_id = gone.headers["content-location"].split("/")[2]
        # the run is still known, its thread is not
        runs = client.get(f"/threads/{thread_id}/runs").json()
        assert runs[0]["status"] == "success"
        body = {"assistant_id": AGENT, "input": user_input("y"), "on_completion": "keep"}
        kept = client.post("/runs/wait", json=body)
        kept_thread = kept.headers["content-location"].split("/")[2]
        again = {"assistant_id": AGENT, "input": user_input("z")}
        more = client.post(f"/threads/{kept_thread}/runs/wait", json=again)
        assert texts(more.json())[-2:] == ["z", "s0 after z"]
        lost = client.post(f"/threads/{thread_id}/runs/wait", json=again)
        assert lost.status_code == 404


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancel_stops_a_running_run_and_keeps_its_turn_so_far(serve: Serve, backend: str) -> None:
    url = serve(slow_graph(0.15, 8), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("go"), "if_not_exists": "create"}
        run = client.post("/threads/t3/runs", json=body).json()
        wait_steps(client, "t3", 2)
        cancelled = client.post(f"/threads/t3/runs/{run['run_id']}/cancel?wait=1")
        assert cancelled.status_code == 204
        assert wait_status(client, "t3", run["run_id"], "interrupted")["status"] == "interrupted"
        values = client.get(f"/threads/t3/runs/{run['run_id']}/join").json()
        assert 2 <= len(values["messages"]) < 9  # the input and the steps before the cancel
        assert client.get("/threads/t3/state").json()["metadata"]["status"] == "stopped"
        again = client.post(f"/threads/t3/runs/{run['run_id']}/cancel")
        assert again.status_code == 409
        assert "already ended" in again.json()["detail"]


def test_cancel_with_rollback_discards_the_turn(serve: Serve) -> None:
    url = serve(slow_graph(0.1, 5))
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("one"), "if_not_exists": "create"}
        client.post("/threads/t4/runs/wait", json={**body, "input": user_input("zero")})
        run = client.post("/threads/t4/runs", json=body).json()
        wait_steps(client, "t4", 8)
        path = f"/threads/t4/runs/{run['run_id']}/cancel?wait=1&action=rollback"
        assert client.post(path).status_code == 204
        resumed = client.post("/threads/t4/runs/wait", json={**body, "input": user_input("two")})
        assert "one" not in texts(resumed.json())


@pytest.mark.parametrize("backend", BACKENDS)
def test_reject_answers_409_while_the_thread_is_busy(serve: Serve, backend: str) -> None:
    url = serve(slow_graph(0.2, 3), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("one"), "if_not_exists": "create"}
        first = client.post("/threads/t5/runs", json=body).json()
        second = client.post("/threads/t5/runs", json={**body, "multitask_strategy": "reject"})
        assert second.status_code == 409
        assert "enqueue" in second.json()["detail"]
        streamed = client.post("/threads/t5/runs/stream", json=body)
        assert streamed.status_code == 409
        client.get(f"/threads/t5/runs/{first['run_id']}/join")
        after = client.post("/threads/t5/runs/wait", json=body)
        assert after.status_code == 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_enqueue_runs_after_the_run_ahead(serve: Serve, backend: str) -> None:
    url = serve(slow_graph(0.1, 2), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "if_not_exists": "create", "multitask_strategy": "enqueue"}
        runs = [
            client.post("/threads/t6/runs", json={**body, "input": user_input(text)}).json()
            for text in ("one", "two", "three")
        ]
        assert runs[1]["status"] == "pending"
        final = client.get(f"/threads/t6/runs/{runs[2]['run_id']}/join").json()
        assert [t for t in texts(final) if "after" not in t] == ["one", "two", "three"]
        assert len(final["messages"]) == 9
        for run in runs:
            assert client.get(f"/threads/t6/runs/{run['run_id']}").json()["status"] == "success"


@pytest.mark.parametrize("backend", BACKENDS)
def test_interrupt_stops_the_run_ahead_and_keeps_its_turn(serve: Serve, backend: str) -> None:
    url = serve(slow_graph(0.1, 6), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "if_not_exists": "create"}
        first = client.post("/threads/t7/runs", json={**body, "input": user_input("one")}).json()
        wait_steps(client, "t7", 2)
        second = {**body, "input": user_input("two"), "multitask_strategy": "interrupt"}
        final = client.post("/threads/t7/runs/wait", json=second).json()
        assert client.get(f"/threads/t7/runs/{first['run_id']}").json()["status"] == "interrupted"
        said = texts(final)
        assert said[0] == "one" and "s0 after one" in said  # the first turn's steps so far stay
        assert said[-1] == "s5 after s4 after s3 after s2 after s1 after s0 after two"


@pytest.mark.parametrize("backend", BACKENDS)
def test_rollback_discards_the_turn_of_the_run_ahead(serve: Serve, backend: str) -> None:
    # the stop reaches the run ahead through its lease, within a second: it must run longer
    url = serve(slow_graph(0.25, 6, slow_on="one"), backend=backend)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "if_not_exists": "create"}
        client.post("/threads/t8/runs/wait", json={**body, "input": user_input("zero")})
        first = client.post("/threads/t8/runs", json={**body, "input": user_input("one")}).json()
        wait_steps(client, "t8", 9)
        second = {**body, "input": user_input("two"), "multitask_strategy": "rollback"}
        final = client.post("/threads/t8/runs/wait", json=second).json()
        said = texts(final)
        assert "one" not in said and not any("after one" in t for t in said)
        assert said[:2] == ["zero", "s0 after zero"] and said[7] == "two"
        # the run rolled back is deleted, as LangGraph deletes it
        assert client.get(f"/threads/t8/runs/{first['run_id']}").status_code == 404


def test_a_run_ahead_that_is_waiting_is_cancelled_by_interrupt(serve: Serve) -> None:
    url = serve(slow_graph(0.2, 3))
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "if_not_exists": "create"}
        client.post("/threads/t9/runs", json={**body, "input": user_input("one")})
        queued = {**body, "input": user_input("two"), "multitask_strategy": "enqueue"}
        waiting = client.post("/threads/t9/runs", json=queued).json()
        last = {**body, "input": user_input("three"), "multitask_strategy": "interrupt"}
        final = client.post("/threads/t9/runs/wait", json=last).json()
        assert "two" not in texts(final)
        status = client.get(f"/threads/t9/runs/{waiting['run_id']}").json()["status"]
        assert status == "interrupted"


def test_bad_requests_get_clear_4xx_answers(serve: Serve) -> None:
    url = serve(slow_graph(0.0, 1))
    with httpx.Client(base_url=url, timeout=30) as client:
        ok = {"assistant_id": AGENT, "input": user_input("x"), "if_not_exists": "create"}
        assert client.post("/threads/b1/runs/wait", json=ok).status_code == 200
        cases: list[tuple[str, str, Any, int, str]] = [
            ("POST", "/threads/b1/runs", b"{not json", 422, "JSON"),
            ("POST", "/threads/b1/runs", {"input": {}}, 422, "assistant_id"),
            ("POST", "/threads/b1/runs", {**ok, "bogus": 1}, 422, "bogus"),
            ("POST", "/threads/b1/runs", {**ok, "stream_mode": "diff"}, 422, "diff"),
            ("POST", "/threads/b1/runs", {**ok, "command": {"resume": 1}}, 422, "not both"),
            ("POST", "/threads/b1/runs", {**ok, "multitask_strategy": "x"}, 422, "reject"),
            ("POST", "/threads/b1/runs", {**ok, "checkpoint_id": "c"}, 422, "checkpoint_id"),
            ("POST", "/threads/b1/runs", {**ok, "checkpoint_id": "99"}, 404, "checkpoint 99"),
            ("POST", "/threads/b1/runs", {**ok, "assistant_id": "other"}, 404, "assistant"),
            ("POST", "/threads/b1/runs", {**ok, "interrupt_before": ["s0"]}, 422, "compiling"),
            (
                "POST",
                "/threads/b1/runs",
                {
                    **ok,
                    "command": None,
                    "input": None,
                    "config": {"configurable": {"user_id": "eve"}},
                },
                422,
                "user_id",
            ),
            ("POST", "/threads/nope/runs", {**ok, "if_not_exists": None}, 404, "nope"),
            ("POST", "/threads/b1/runs/wait", {**ok, "input": {"messages": 5}}, 422, "messages"),
            ("GET", "/threads/b1/runs/unknown", None, 404, "unknown"),
            ("GET", "/threads/b1/runs/unknown/join", None, 404, "unknown"),
            ("POST", "/threads/b1/runs/unknown/cancel", None, 404, "unknown"),
            ("GET", "/threads/nope/runs", None, 404, "nope"),
        ]
        for method, path, body, status, words in cases:
            if isinstance(body, bytes):
                answer = client.request(
                    method, path, content=body, headers={"content-type": "application/json"}
                )
            else:
                answer = client.request(method, path, json=body)
            assert answer.status_code == status, (path, body, answer.text)
            assert words in answer.text, (path, body, answer.text)


def test_a_failed_run_reports_its_error_and_wait_carries_it(serve: Serve) -> None:
    def failing(checkpointer: Checkpointer) -> CompiledGraph[Any]:
        def boom(state: AgentState) -> Message:
            raise RuntimeError("the tool broke")

        graph = StateGraph(AgentState)
        graph.add_node("boom", boom)
        graph.set_entry_point("boom")
        return graph.compile(checkpointer)

    url = serve(failing)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("x"), "if_not_exists": "create"}
        answer = client.post("/threads/f1/runs/wait", json=body)
        assert answer.status_code == 200
        error = answer.json()["__error__"]
        assert error["error"] == "NodeError" and "the tool broke" in error["message"]
        run_id = answer.headers["content-location"].split("/")[-1]
        assert client.get(f"/threads/f1/runs/{run_id}").json()["status"] == "error"


def test_another_users_runs_are_not_found(serve: Serve) -> None:
    url = serve(slow_graph(0.0, 1), authenticate=api_keys({"ka": "alice", "kb": "bob"}))
    alice = httpx.Client(base_url=url, timeout=30, headers={"x-api-key": "ka"})
    bob = httpx.Client(base_url=url, timeout=30, headers={"x-api-key": "kb"})
    with alice, bob:
        body = {"assistant_id": AGENT, "input": user_input("secret"), "if_not_exists": "create"}
        answer = alice.post("/threads/shared/runs/wait", json=body)
        run_path = answer.headers["content-location"]
        for path in (run_path, f"{run_path}/join", f"{run_path}/stream"):
            assert bob.get(path).status_code == 404, path
        assert bob.post(f"{run_path}/cancel").status_code == 404
        assert bob.get("/threads/shared/runs").status_code == 404
        # bob's thread of the same id is his own: alice's messages are not in it
        mine = bob.post("/threads/shared/runs/wait", json={**body, "input": user_input("b")})
        assert texts(mine.json()) == ["b", "s0 after b"]
        assert alice.get(run_path).json()["status"] == "success"
        assert httpx.get(f"{url}{run_path}").status_code == 401


def test_interrupt_then_resume_over_http(serve: Serve) -> None:
    url = serve(asking_graph)
    with httpx.Client(base_url=url, timeout=30) as client:
        body = {"assistant_id": AGENT, "input": user_input("hi"), "if_not_exists": "create"}
        paused = client.post("/threads/i1/runs/wait", json=body).json()
        assert paused["__interrupt__"][0]["value"] == {"question": "your name?"}
        run_id = client.get("/threads/i1/runs").json()[0]["run_id"]
        assert client.get(f"/threads/i1/runs/{run_id}").json()["status"] == "interrupted"
        resume = {"assistant_id": AGENT, "command": {"resume": "Ada"}}
        done = client.post("/threads/i1/runs/wait", json=resume).json()
        assert texts(done) == ["hi", "hello Ada"]
        assert "__interrupt__" not in done
