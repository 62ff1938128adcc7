"""Tool approval through the official JS SDK (``@langchain/langgraph-sdk``).

``langgraph_js/approval.mjs`` pauses a served ``HumanApproval`` agent, reads
the pending call from the stream's ``__interrupt__`` and the thread's
``interrupts``, and resumes with ``command: {resume: {decisions: [...]}}``:
an edit on one thread, a rejection on another.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="the server extra is not installed")

from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.testing.server import served
from tests.clients.langgraph.node import installed, needs_node, run
from tests.server.approval_graph import GRAPH_ID, graph

pytestmark = [pytest.mark.slow, needs_node]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tenxgraph.server.app import create_app

    folder: Path = tmp_path_factory.mktemp("approval-js")
    checkpointer = SqliteCheckpointer(str(folder / "threads.sqlite"))
    app = create_app(graph.recompile(checkpointer=checkpointer), graph_id=GRAPH_ID)
    app.state.context.on_shutdown.append(checkpointer.aclose)
    with served(app) as url:
        yield url


def test_the_js_sdk_edits_and_rejects_a_pending_call(server_url: str) -> None:
    installed()
    seen: dict[str, Any] = json.loads(run("node", "approval.mjs", server_url, GRAPH_ID))
    for case, path in (("edited", "important.txt"), ("rejected", "thesis.tex")):
        paused = seen[case]
        [value] = paused["streamed"]
        assert value["type"] == "tool_approval"
        assert value["description"] == "Delete this file?"
        assert [(c["name"], c["args"]) for c in value["calls"]] == [("delete_file", {"path": path})]
        assert paused["kept"] == value
        assert paused["status"] == "interrupted"
        assert paused["after"]["status"] == "idle"

    messages = seen["edited"]["after"]["messages"]
    [asked] = [m for m in messages if m["type"] == "ai" and m["args"]]
    assert asked["args"] == {"path": "scratch.txt"}  # the stored call is the edited one
    assert [m["text"] for m in messages if m["type"] == "tool"] == ["deleted scratch.txt"]
    assert messages[-1]["text"] == "delete_file said: deleted scratch.txt"

    messages = seen["rejected"]["after"]["messages"]
    [result] = [m for m in messages if m["type"] == "tool"]
    assert result["status"] == "error" and "I still need it" in result["text"]
    assert "I still need it" in messages[-1]["text"]
