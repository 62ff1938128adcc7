"""The official JS SDK (``@langchain/langgraph-sdk``, pinned in langgraph_js/package-lock.json).

``checks.mjs`` calls every method of the SDK's clients (assistants, threads,
runs with each stream mode, store, crons) against a live server of
``graph.build`` and validates each answer against the JSON Schema generated
from the SDK's own ``.d.ts`` types; it prints one JSON line per check. Each
line is one test case here. A check that fails today is a strict xfail whose
reason says what fails (issue #33): when the server learns it, the xfail
turns red and its line below is removed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.clients.langgraph.node import installed, needs_node, run

pytestmark = [pytest.mark.slow, needs_node]


JS_CHECKS: dict[str, str | None] = {
    "assistants.get": None,
    "assistants.getGraph": None,
    "assistants.getSchemas": None,
    "assistants.getSubgraphs": None,
    "assistants.search": None,
    "assistants.search(includePagination)": None,
    "assistants.count": None,
    "assistants.create": None,
    "assistants.update": None,
    "assistants.delete": None,
    "assistants.getVersions": None,
    "assistants.setLatest": None,
    "threads.create": None,
    "threads.create(threadId+ifExists)": None,
    "threads.create(graphId)": None,
    "threads.create(supersteps)": None,
    "threads.get": None,
    "threads.update": None,
    "threads.delete": None,
    "threads.search": None,
    "threads.search(metadata.graph_id after a run)": None,
    "threads.count": None,
    "threads.copy": None,
    "threads.getState": None,
    "threads.getState(checkpoint)": None,
    "threads.updateState": None,
    "threads.patchState": None,
    "threads.getHistory": None,
    "threads.getHistory(before+limit)": None,
    "threads.joinStream": None,
    "threads.prune": None,
    "threads.stream(commands protocol)": None,
    "threads.stream(interrupt then input.respond)": None,
    "runs.wait(input as LangChain messages)": None,
    "runs.create": None,
    "runs.create(stateless)": None,
    "runs.createBatch": None,
    "runs.stream(streamMode=values)": None,
    "runs.stream(streamMode=updates)": None,
    "runs.stream(streamMode=messages)": None,
    "runs.stream(streamMode=messages-tuple)": None,
    "runs.stream(streamMode=custom)": None,
    "runs.stream(streamMode=events)": None,
    "runs.stream(streamMode=debug)": None,
    "runs.stream(streamMode=tasks)": None,
    "runs.stream(streamMode=checkpoints)": None,
    "runs.stream(streamMode=tools)": None,
    "runs.stream(streamMode=lifecycle)": None,
    "runs.stream(values: messages are LangChain Messages)": None,
    "runs.stream(messages-tuple: chunks are Messages)": (
        "#33: the JS SDK's Message type has no AIMessageChunk, which LangGraph's server sends"
    ),
    "runs.stream(multiple modes)": None,
    "runs.stream(stateless)": None,
    "runs.stream(interrupt then command.resume)": None,
    "runs.stream(thread.interrupts)": None,
    "runs.wait(command.resume with input null)": None,
    "runs.wait(command.resume with input {})": None,
    "runs.stream(command.goto)": None,
    "runs.stream(checkpoint: regenerate)": None,
    "runs.wait": None,
    "runs.wait(stateless)": None,
    "runs.list": None,
    "runs.get": None,
    "runs.cancel": None,
    "runs.cancel(action=rollback)": None,
    "runs.cancelMany": None,
    "runs.join": None,
    "runs.joinStream": None,
    "runs.delete": None,
    "store.putItem": None,
    "store.getItem": None,
    "store.getItem(missing is null)": None,
    "store.deleteItem": None,
    "store.searchItems": None,
    "store.listNamespaces": None,
    "crons.create": None,
    "crons.createForThread": None,
    "crons.update": None,
    "crons.delete": None,
    "crons.search": None,
    "crons.count": None,
}
"""Every check of checks.mjs, in its order, with the reason it fails today (None: it passes)."""


@pytest.fixture(scope="module")
def js_results(langgraph_server: str) -> dict[str, dict[str, Any]]:
    """The checks' JSON lines against this backend's server, by check name."""
    package = installed()
    output = run("node", "checks.mjs", langgraph_server, str(package / "schema" / "sdk.json"))
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return {line["name"]: line for line in lines}


def test_the_js_checks_are_the_ones_listed_here(js_results: dict[str, dict[str, Any]]) -> None:
    assert list(js_results) == list(JS_CHECKS)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else name
        for name, reason in JS_CHECKS.items()
    ],
)
def test_js_sdk(js_results: dict[str, dict[str, Any]], name: str) -> None:
    result = js_results.get(name)
    assert result is not None, f"checks.mjs reported nothing for {name}"
    assert result["ok"], result["reason"]
