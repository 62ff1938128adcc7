"""Browser-side tools over HTTP: the stream sends the calls, the client posts the results."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tenxgraph.core.graph import CompiledGraph, RemoteTool, StateGraph, create_agent, interrupt
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.server._shapes import interrupts_json
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer
from tests.server.conftest import Serve
from tests.server.test_runs import AGENT, texts, user_input, wait_status
from tests.server.test_stream_resume import sse


def locating_graph(timeout: float = 60.0, calls: int = 1) -> Any:
    """The model calls ``get_location`` (a remote tool) ``calls`` times at once, then answers."""

    def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
        tool = RemoteTool(
            "get_location",
            "The user's location, from the browser.",
            {"type": "object", "properties": {"accuracy": {"type": "string"}}},
            timeout=timeout,
        )
        blocks = [
            ToolCallBlock(id=f"c{i}", name="get_location", args={"accuracy": "fine"})
            for i in range(calls)
        ]
        model = ScriptedModel([Message(role="assistant", content=blocks), "Found you."])
        return create_agent(model, [tool], checkpointer=checkpointer)

    return build


def _body(**extra: Any) -> dict[str, Any]:
    return {
        "assistant_id": AGENT,
        "input": user_input("where am I?"),
        "stream_mode": ["updates"],
        "if_not_exists": "create",
        **extra,
    }


def test_the_stream_sends_the_call_and_goes_on_with_the_posted_result(serve: Serve) -> None:
    url = serve(locating_graph())
    with (
        httpx.Client(base_url=url, timeout=30) as client,
        client.stream("POST", "/threads/r1/runs/stream", json=_body()) as response,
    ):
        events = sse(response)
        seen = []
        for event in events:
            seen.append(event)
            if event["event"] == "remote_tool_call":
                break
        run_id = seen[0]["data"]["run_id"]
        call = seen[-1]["data"]
        assert call == {
            "type": "remote_tool_call",
            "id": "c0",
            "name": "get_location",
            "args": {"accuracy": "fine"},
            "tool_type": "remote",
        }
        paused = [e["data"] for e in seen if e["event"] == "updates"][-1]
        assert paused["__interrupt__"][0]["value"]["type"] == "remote_tool_calls"
        assert paused["__interrupt__"][0]["kind"] == "remote_tool_calls"
        assert client.get(f"/threads/r1/runs/{run_id}").json()["status"] == "running"
        posted = client.post(
            f"/threads/r1/runs/{run_id}/tool_results",
            json={"results": [{"call_id": "c0", "output": {"city": "Paris"}}]},
        )
        assert posted.status_code == 200, posted.text
        assert posted.json() == {"run_id": run_id, "accepted": ["c0"], "pending": []}
        rest = list(events)
    assert rest[-1]["event"] == "end"
    nodes = [next(iter(e["data"])) for e in rest if e["event"] == "updates"]
    assert nodes == ["tools", "agent"]
    with httpx.Client(base_url=url, timeout=30) as client:
        assert wait_status(client, "r1", run_id, "success")["status"] == "success"
        log = client.get("/threads/r1/state").json()["values"]
        assert texts(log)[-1] == "Found you."
        result = log["messages"][-2]  # a LangChain tool message: the output as JSON text
        assert result["tool_call_id"] == "c0" and json.loads(result["content"]) == {"city": "Paris"}
        late = client.post(
            f"/threads/r1/runs/{run_id}/tool_results", json={"call_id": "c0", "output": 1}
        )
        assert late.status_code == 409


def test_results_for_calls_that_are_not_pending_are_refused(serve: Serve) -> None:
    url = serve(locating_graph(calls=2))
    with httpx.Client(base_url=url, timeout=30) as client:
        run = client.post("/threads/r2/runs", json=_body()).json()
        path = f"/threads/r2/runs/{run['run_id']}/tool_results"
        deadline = time.monotonic() + 10
        probe = {"results": [{"call_id": "nope", "output": 1}]}
        while client.post(path, json=probe).status_code != 422:
            assert time.monotonic() < deadline
            time.sleep(0.02)  # 409 until the run pauses for the calls
        bad = [
            (probe, "not waiting"),
            ({"results": []}, "at least one"),
            ({"results": [{"call_id": "c0"}]}, "'output' is missing"),
            ({"results": [{"call_id": "c0", "output": 1, "extra": 2}]}, "extra"),
            ({"results": [{"call_id": "c0", "output": 1}] * 2}, "answered already"),
            ([1], "expected"),
        ]
        for body, words in bad:
            answer = client.post(path, json=body)
            assert answer.status_code == 422, (body, answer.text)
            assert words in answer.json()["detail"], (body, answer.text)
        first = client.post(path, json={"tool_call_id": "c0", "content": "Paris"})
        assert first.json()["pending"] == ["c1"]
        again = client.post(path, json={"call_id": "c0", "output": "Paris"})
        assert again.status_code == 422
        assert client.get(f"/threads/r2/runs/{run['run_id']}").json()["status"] == "running"
        client.post(path, json={"call_id": "c1", "output": "Lyon", "is_error": False})
        values = client.get(f"/threads/r2/runs/{run['run_id']}/join").json()
        assert texts(values)[-1] == "Found you."
        outputs = [m["content"] for m in values["messages"] if m["type"] == "tool"]
        assert outputs == ["Paris", "Lyon"]


def test_an_unanswered_call_gets_a_timed_out_result_at_its_deadline(serve: Serve) -> None:
    url = serve(locating_graph(timeout=0.5))
    with httpx.Client(base_url=url, timeout=30) as client:
        started = time.monotonic()
        values = client.post("/threads/r3/runs/wait", json=_body()).json()
        assert time.monotonic() - started >= 0.5
        assert texts(values)[-1] == "Found you."
        [result] = [m for m in values["messages"] if m["type"] == "tool"]
        assert result["status"] == "error"
        assert "timed out after 0.5 s" in result["content"]


def test_cancelling_a_run_that_waits_for_the_client_leaves_the_thread_paused(
    serve: Serve,
) -> None:
    url = serve(locating_graph())
    with httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/threads/r4/runs/stream", json=_body()) as response:
            for event in sse(response):
                if event["event"] == "metadata":
                    run_id = event["data"]["run_id"]
                if event["event"] == "remote_tool_call":
                    break
        cancelled = client.post(f"/threads/r4/runs/{run_id}/cancel?wait=1")
        assert cancelled.status_code == 204
        assert client.get(f"/threads/r4/runs/{run_id}").json()["status"] == "interrupted"
        assert client.get("/threads/r4").json()["status"] == "interrupted"
        resume = {"tool_results": [{"call_id": "c0", "output": "Nice"}]}
        body = {"assistant_id": AGENT, "command": {"resume": resume}}
        values = client.post("/threads/r4/runs/wait", json=body).json()
        assert texts(values)[-1] == "Found you."


def test_a_newer_run_with_interrupt_displaces_a_run_waiting_for_the_client(serve: Serve) -> None:
    url = serve(locating_graph())
    with httpx.Client(base_url=url, timeout=30) as client:
        waiting = client.post("/threads/r5/runs", json=_body()).json()
        path = f"/threads/r5/runs/{waiting['run_id']}/tool_results"
        probe = {"results": [{"call_id": "nope", "output": 1}]}
        deadline = time.monotonic() + 10
        while client.post(path, json=probe).status_code != 422:  # 409 until it waits
            assert time.monotonic() < deadline
            time.sleep(0.02)
        newer = {**_body(), "input": user_input("never mind"), "multitask_strategy": "interrupt"}
        values = client.post("/threads/r5/runs/wait", json=newer).json()
        assert texts(values)[-2:] == ["never mind", "Found you."]
        status = client.get(f"/threads/r5/runs/{waiting['run_id']}").json()["status"]
        assert status == "interrupted"
        assert client.post(path, json={"call_id": "c0", "output": 1}).status_code == 409


def test_a_user_interrupt_shaped_like_the_remote_pause_ends_the_run_as_a_question(
    serve: Serve,
) -> None:
    copied = {"type": "remote_tool_calls", "calls": [{"call": {"id": "x"}, "deadline": "2000"}]}

    def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
        def ask(state: AgentState) -> dict[str, Any]:
            interrupt(copied)
            return {}

        graph = StateGraph(AgentState)
        graph.add_node("ask", ask)
        graph.set_entry_point("ask")
        return graph.compile(checkpointer)

    url = serve(build)
    with (
        httpx.Client(base_url=url, timeout=30) as client,
        client.stream("POST", "/threads/u1/runs/stream", json=_body()) as response,
    ):
        events = list(sse(response))
    assert "remote_tool_call" not in [e["event"] for e in events]  # no call streamed, no wait
    [item] = [e["data"] for e in events if e["event"] == "updates"][-1]["__interrupt__"]
    assert item["value"] == copied and item["when"] == "inside" and "kind" not in item
    with httpx.Client(base_url=url, timeout=30) as client:
        [shown] = client.get("/threads/u1/state").json()["interrupts"]
        assert shown["value"] == copied and "kind" not in shown


def test_a_remote_pause_saved_as_inside_before_its_kind_existed_is_shown_with_the_kind() -> None:
    app = locating_graph()(InMemoryCheckpointer())
    app.invoke({"messages": [("user", "where am I?")]}, {"thread_id": "old"})
    state = app.get_state({"thread_id": "old"})
    assert state is not None
    state.execution_meta.interrupt_kind = "inside"  # as a row saved before the kind existed

    [item] = interrupts_json("old", state)
    assert item["kind"] == "remote_tool_calls"
    state.execution_meta.interrupt_value = {"type": "remote_tool_calls", "calls": []}
    [item] = interrupts_json("old", state)
    assert "kind" not in item
