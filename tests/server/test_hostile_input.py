"""Hostile bodies over real HTTP: each a 4xx naming the problem, and nothing stored.

A JSON body is parsed strictly (UTF-8, no NaN or Infinity, no lone
surrogates) and counted (messages, content blocks, keys, depth) before any
route validates it; a run's state input is checked against the graph's
state class before the run is created. See docs/server.md, "Errors and limits".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.errors import ConfigError
from tenxgraph.server.app import app_from_env
from tenxgraph.storage.checkpointer import Checkpointer
from tests.server.conftest import Serve

AGENT = "agent"
HI = {"messages": [{"role": "user", "content": "hi"}]}


def raw(client: httpx.Client, method: str, path: str, body: str | bytes) -> httpx.Response:
    """Send ``body`` as it is (a str may hold lone surrogates: sent as their escapes' bytes)."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return client.request(method, path, content=data, headers={"content-type": "application/json"})


def run_body(**fields: Any) -> dict[str, Any]:
    return {"assistant_id": AGENT, "if_not_exists": "create", "input": HI, **fields}


def test_bodies_that_are_not_json_text_get_422_naming_the_problem(serve: Serve) -> None:
    url = serve(memory=True)
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/threads", json={"thread_id": "t1"}).status_code == 200
        run = json.dumps(run_body())[:-1]  # a run body, open for one more field
        cases: list[tuple[str, str, str | bytes, str]] = [
            ("PATCH", "/threads/t1", '{"metadata": {"a": "x\\udfff"}}', "metadata.a"),
            ("POST", "/threads/search", '{"metadata": {"a": "\\ud800"}}', "metadata.a"),
            # found by the fuzz test: the refusal named the key, which held the surrogate
            ("POST", "/threads/search", '{"status": {"\\ud800": "\\ud800"}}', "status.\\ud800"),
            ("POST", "/threads", '{"metadata": {"\\udc00": 1}}', "metadata"),
            ("POST", "/store/items/search", '{"query": "\\ud800"}', "query"),
            ("POST", "/store/items/search", '{"filter": {"a": "\\udc00"}}', "filter.a"),
            ("POST", "/store/namespaces", '{"prefix": ["\\ud800"]}', "prefix[0]"),
            ("PUT", "/store/items", '{"namespace": ["a"], "key": "\\ud800", "value": {}}', "key"),
            ("POST", "/threads", '{"thread_id": "s1", "metadata": {"a": "\\ud800"}}', "metadata.a"),
            ("POST", "/threads", '{"thread_id": "s2", "metadata": {"a": NaN}}', "NaN"),
            ("POST", "/threads", '{"thread_id": "s3", "metadata": {"a": -Infinity}}', "Infinity"),
            ("POST", "/threads", '{"thread_id": "s4", "metadata": {"a": 1e999}}', "metadata.a"),
            ("PUT", "/store/items", '{"namespace": ["a"], "key": "k", "value": {"x": NaN}}', "NaN"),
            ("POST", "/runs/wait", run + ', "metadata": {"x": NaN}}', "NaN"),
            ("POST", "/threads/t1/runs", run + ', "metadata": {"x": Infinity}}', "Infinity"),
            ("POST", "/runs", run + ', "metadata": {"x": "\\ud800"}}', "metadata.x"),
            ("POST", "/threads/t1/runs/wait", run + ', "config": {"tags": ["\\ud83d"]}}', "tags"),
            ("POST", "/threads", b'{"thread_id": "s5", "metadata": {"a": "\xff"}}', "UTF-8"),
            ("POST", "/threads/t1/runs/wait", b'{"assistant_id": "\xc3\x28"}', "UTF-8"),
        ]
        for method, path, body, words in cases:
            answer = raw(client, method, path, body)
            assert answer.status_code == 422, (path, body, answer.text)
            assert words in answer.json()["detail"], (path, body, answer.text)
        for thread_id in ("s1", "s2", "s3", "s4", "s5"):
            assert client.get(f"/threads/{thread_id}").status_code == 404
        assert client.get("/threads/t1").json()["metadata"] == {}
        assert client.get("/threads/t1/runs").json() == []
        found = client.post("/store/items/search", json={"namespace_prefix": ["a"]}).json()
        assert found == {"items": []}
        assert client.get("/threads/t1/state").json()["values"]["messages"] == []
        pair = client.post("/threads", json={"metadata": {"a": "\U0001f642"}})  # a real pair
        assert pair.status_code == 200 and pair.json()["metadata"] == {"a": "\U0001f642"}


def test_run_inputs_and_configs_that_raised_inside_get_422(serve: Serve) -> None:
    url = serve()
    with httpx.Client(base_url=url, timeout=30) as client:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"input": {"messages": [[[], "x"]]}}, "messages"),  # once a TypeError: 500
            ({"input": {"messages": [[{}, "x"]]}}, "messages"),
            ({"config": {"recursion_limit": "x"}}, "recursion_limit"),
            ({"config": {"recursion_limit": []}}, "recursion_limit"),
            ({"config": {"recursion_limit": -1}}, "recursion_limit"),
            ({"config": {"configurable": {"recursion_limit": True}}}, "recursion_limit"),
        ]
        for path in ("/threads/r1/runs/wait", "/threads/r1/runs/stream", "/threads/r1/runs"):
            for fields, words in cases:
                answer = client.post(path, json=run_body(**fields))
                assert answer.status_code == 422, (path, fields, answer.text)
                assert words in answer.json()["detail"], (path, fields, answer.text)
        assert client.get("/threads/r1").status_code == 404  # no run created the thread
        good = run_body(config={"recursion_limit": 50})
        assert client.post("/threads/r1/runs/wait", json=good).status_code == 200


class Topic(AgentState):
    """A state with a field of its own."""

    topic: str = ""


def topic_graph(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    def answer(state: Topic) -> Message:
        return Message.text_message(f"on {state.topic}", role="assistant")

    graph = StateGraph(Topic)
    graph.add_node("answer", answer)
    graph.set_entry_point("answer")
    return graph.compile(checkpointer)


def test_a_run_whose_state_input_does_not_fit_is_refused_before_it_starts(serve: Serve) -> None:
    url = serve(topic_graph)
    with httpx.Client(base_url=url, timeout=30) as client:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"input": {**HI, "bogus": 1}}, "bogus"),
            ({"input": {"topic": 5}}, "topic"),
            ({"input": {"context_summary": "x"}}, "context_summary"),
            ({"input": None, "command": {"update": {"bogus": 1}}}, "bogus"),
        ]
        for path in ("/threads/b1/runs/stream", "/runs/stream", "/threads/b1/runs"):
            for fields, words in cases:
                answer = client.post(path, json=run_body(**fields))
                assert answer.status_code == 422, (path, fields, answer.text)
                assert words in answer.json()["detail"], (path, fields, answer.text)
        assert client.get("/threads/b1").status_code == 404
        fine = client.post("/threads/b1/runs/wait", json=run_body(input={**HI, "topic": "tea"}))
        assert fine.json()["messages"][-1]["content"] == "on tea"


def test_counts_over_the_limits_get_413_naming_the_limit_and_its_option(serve: Serve) -> None:
    url = serve(max_messages=3, max_content_blocks=2, max_keys=5, max_depth=6)
    block = {"type": "text", "text": "x"}
    with httpx.Client(base_url=url, timeout=30) as client:
        four = [{"role": "user", "content": "x"}] * 4
        cases: list[tuple[str, dict[str, Any], str, str]] = [
            ("/threads/c1/runs/wait", run_body(input={"messages": four}), "4 messages", "MESSAGES"),
            (
                "/threads/c1/runs/wait",  # counted over the whole body
                run_body(input={"messages": four[:2]}, metadata={"messages": four[:2]}),
                "4 messages",
                "max_messages",
            ),
            (
                "/threads/c1/runs/wait",
                run_body(input={"messages": [{"role": "user", "content": [block] * 3}]}),
                "3 content blocks",
                "CONTENT_BLOCKS",
            ),
            (
                "/threads/c1/state",
                {"values": {"messages": [["user", [block] * 3]]}},
                "content blocks",
                "max_content_blocks",
            ),
            ("/threads", {"metadata": {str(i): i for i in range(6)}}, "6 keys", "MAX_KEYS"),
            ("/threads", {"metadata": {"a": [[[[[[1]]]]]]}}, "levels", "max_depth"),
        ]
        for path, body, words, option in cases:
            answer = client.post(path, json=body)
            assert answer.status_code == 413, (path, body, answer.text)
            detail = answer.json()["detail"]
            assert words in detail and option in detail, (path, detail)
        assert client.get("/threads/c1").status_code == 404
        assert client.post("/threads/search", json={}).json() == []
        within = run_body(input={"messages": [{"role": "user", "content": [block] * 2}] * 3})
        assert client.post("/threads/c1/runs/wait", json=within).status_code == 200


def test_the_default_limits_refuse_the_flood_a_real_app_never_sends(serve: Serve) -> None:
    url = serve()
    flood = run_body(input={"messages": [["user", "x"]] * 200_000})
    deep = '{"metadata": ' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}"
    with httpx.Client(base_url=url, timeout=60) as client:
        answer = client.post("/threads/f1/runs/wait", json=flood)
        assert answer.status_code == 413, answer.text[:300]
        assert "200000 messages" in answer.json()["detail"]
        answer = raw(client, "POST", "/threads", deep)
        assert answer.status_code == 413, answer.text[:300]
        assert "max_depth" in answer.json()["detail"]
        assert client.get("/threads/f1").status_code == 404


def test_the_limits_come_from_the_serve_variables(serve_env: dict[str, str]) -> None:
    env = {**serve_env, "TENXGRAPH_SERVE_MAX_MESSAGES": "7", "TENXGRAPH_SERVE_MAX_DEPTH": "9"}
    limits = app_from_env(env).state.context.settings.json_limits
    assert (limits.max_messages, limits.max_depth, limits.max_keys) == (7, 9, 10_000)
    with pytest.raises(ConfigError, match="TENXGRAPH_SERVE_MAX_KEYS"):
        app_from_env({**env, "TENXGRAPH_SERVE_MAX_KEYS": "lots"})


def test_every_route_that_reads_a_body_parses_it_strictly(tmp_path: Path) -> None:
    """A new router with a JSON body must use CheckedJsonRoute, or its body escapes the checks."""
    from fastapi.routing import APIRoute

    from tenxgraph.server._limits import CheckedJsonRoute
    from tenxgraph.server.app import create_app
    from tenxgraph.storage.checkpointer import SqliteCheckpointer
    from tenxgraph.storage.longterm import InMemoryStore

    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("n", lambda state: Message.text_message("ok", role="assistant"))
    graph.set_entry_point("n")
    app = create_app(
        graph.compile(SqliteCheckpointer(tmp_path / "t.sqlite")), memory=InMemoryStore()
    )

    def walk(routes: list[Any]) -> list[APIRoute]:
        found: list[APIRoute] = []
        for route in routes:
            if isinstance(route, APIRoute):
                found.append(route)
            inner = getattr(getattr(route, "original_router", route), "routes", None)
            if inner is not None and not isinstance(route, APIRoute):
                found += walk(list(inner))
        return found

    with_bodies = [route for route in walk(app.routes) if route.body_field is not None]
    assert len(with_bodies) > 20  # the check sees the app's routes
    unchecked = [r.path for r in with_bodies if not isinstance(r, CheckedJsonRoute)]
    assert unchecked == []
