"""A served supervisor: its workers' tokens in the stream under ``stream_subgraphs``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tenxgraph.core.graph import CompiledGraph, create_agent, create_supervisor
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import ToolCallBlock
from tenxgraph.storage.checkpointer import Checkpointer
from tests.server.conftest import Serve
from tests.server.test_langgraph_routes import events, thread

RUN = {"assistant_id": "agent"}


def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    math = create_agent(ScriptedModel(["four"] * 4), name="math")
    ask = ToolCallBlock(id="m1", name="math", args={"request": "2+2"})
    return create_supervisor(
        ScriptedModel([ask, "2+2 is four."] * 2), [math], checkpointer=checkpointer
    )


@pytest.fixture
def client(serve: Serve) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=serve(build), timeout=60) as client:
        yield client


def test_a_workers_tokens_are_streamed_under_its_call(client: httpx.Client) -> None:
    body = {
        **RUN,
        "input": {"messages": [{"role": "user", "content": "2+2?"}]},
        "stream_mode": ["messages-tuple", "updates"],
        "stream_subgraphs": True,
    }
    with client.stream("POST", f"/threads/{thread(client)}/runs/stream", json=body) as response:
        assert response.status_code == 200
        seen = [(e["event"], e["data"]) for e in events(response)]
    names = {name for name, _ in seen}
    assert {"messages|tools|math:m1", "updates|tools|math:m1"} <= names
    said = [data for name, data in seen if name == "messages|tools|math:m1"]
    texts = [(m["delta"], "".join(b["text"] for b in m["content"])) for m, _ in said]
    assert texts == [(True, "four"), (False, "four")]  # the token, then the message
    assert {meta["langgraph_checkpoint_ns"] for _, meta in said} == {"tools|math:m1"}

    plain = {**body, "stream_subgraphs": False}
    with client.stream("POST", f"/threads/{thread(client)}/runs/stream", json=plain) as response:
        assert not any("|" in e["event"] for e in events(response))
