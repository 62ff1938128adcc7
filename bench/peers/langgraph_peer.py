"""LangGraph's figures for our workloads, through its public API (``StateGraph`` over
``MessagesState``, whose ``messages`` channel merges with ``add_messages``; messages are
langchain-core's ``HumanMessage`` / ``AIMessage``). Run in the peers venv only.

Where LangGraph differs from ours in a way that changes the figure, the figure's note says
so: a checkpoint holds the whole channel value, so one thread's stored and held bytes grow
with the square of its length, and the W6 figures are for one thread of ``W6_MESSAGES``
(ours: 100 threads of 1,000; per message, ours does not depend on the thread's length).
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver  # type: ignore[import-not-found]
from langgraph.checkpoint.sqlite import SqliteSaver  # type: ignore[import-not-found]
from langgraph.graph import END, START, MessagesState, StateGraph  # type: ignore[import-not-found]
from langgraph.graph.message import add_messages  # type: ignore[import-not-found]

from bench._timing import best_us

NAME = "langgraph"
W2_TURNS = 1_000
SPAN = 20
W4_MESSAGES = 10_000
W4_RUNS = 3
W6_MESSAGES = 1_000
Graph = Any  # a compiled LangGraph graph (untyped here: LangGraph is not in our venv)


def peer_version() -> str:
    return version("langgraph")


def ok(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage("ok")]}


def three_nodes(checkpointer: object | None = None) -> Graph:
    """W1's graph: START -> a -> b -> c -> END, each node appending one assistant message."""
    graph = StateGraph(MessagesState)
    for name in ("a", "b", "c"):
        graph.add_node(name, ok)
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", END)
    return graph.compile(checkpointer=checkpointer)


def w1_invoke() -> dict[str, Any]:
    app = three_nodes()
    question = {"messages": [HumanMessage("hi")]}
    assert len(app.invoke(question)["messages"]) == 4
    return {"w1_invoke_us": best_us(lambda: app.invoke(question), number=200)}


def w1_checkpointer() -> dict[str, Any]:
    """``InMemorySaver``, a fresh thread per ``invoke`` (as ours)."""
    app = three_nodes(InMemorySaver())
    question = {"messages": [HumanMessage("hi")]}
    threads = iter(range(10**9))

    def one_invoke() -> object:
        return app.invoke(question, {"configurable": {"thread_id": f"w1-{next(threads)}"}})

    assert len(app.invoke(question, {"configurable": {"thread_id": "check"}})["messages"]) == 4
    return {"w1_checkpointer_us": best_us(one_invoke, number=100)}


def one_node(node: Callable[[MessagesState], dict[str, list[AIMessage]]], saver: object) -> Graph:
    graph = StateGraph(MessagesState)
    graph.add_node("reply", node)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph.compile(checkpointer=saver)


def numbered_reply(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage(f"Assistant answer number {len(state['messages'])}.")]}


def w2_graph() -> dict[str, Any]:
    """W2: ``W2_TURNS`` invokes on one ``SqliteSaver`` thread; median of the last ``SPAN``."""
    with tempfile.TemporaryDirectory() as directory:
        connection = sqlite3.connect(os.path.join(directory, "w2.sqlite"), check_same_thread=False)
        app = one_node(numbered_reply, SqliteSaver(connection))
        config = {"configurable": {"thread_id": "w2"}}
        times: list[float] = []
        for turn in range(1, W2_TURNS + 1):
            question = {"messages": [HumanMessage(f"User question number {turn}?")]}
            start = time.perf_counter()
            app.invoke(question, config)
            times.append(time.perf_counter() - start)
        connection.close()
    return {"w2_turn_ms": round(statistics.median(times[-SPAN:]) * 1e3, 3)}


def w3_add_messages() -> dict[str, Any]:
    """``add_messages(left, [new])`` into 100,000 and 1,000 messages, each with an id (as ours)."""
    left = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(100_000)]
    new = AIMessage("new", id="new")
    assert len(add_messages(left, [new])) == 100_001
    short = left[:1_000]
    return {
        "w3_add_messages_us_at_100000": best_us(lambda: add_messages(left, [new]), number=5),
        "w3_add_messages_us_at_1000": best_us(lambda: add_messages(short, [new]), number=200),
    }


def short_reply(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}


def w4_seed(path: str) -> None:
    """A thread of 10,000 alternating messages written by ``update_state`` (no node runs)."""
    history = [
        (AIMessage if i % 2 else HumanMessage)(f"message {i} " * 4) for i in range(W4_MESSAGES)
    ]
    with sqlite3.connect(path, check_same_thread=False) as connection:
        app = one_node(short_reply, SqliteSaver(connection))
        app.update_state({"configurable": {"thread_id": "w4"}}, {"messages": history})
    connection.close()


def w4_turn(path: str) -> dict[str, Any]:
    """In a fresh process: build the graph, then time loading the thread and one turn."""
    connection = sqlite3.connect(path, check_same_thread=False)
    app = one_node(short_reply, SqliteSaver(connection))
    start = time.perf_counter()
    result = app.invoke(
        {"messages": [HumanMessage("one more")]}, {"configurable": {"thread_id": "w4"}}
    )
    elapsed = time.perf_counter() - start
    assert len(result["messages"]) == W4_MESSAGES + 2
    return {"w4_load_and_turn_ms": round(elapsed * 1e3, 1)}


def w4_resume() -> dict[str, Any]:
    runs = []
    with tempfile.TemporaryDirectory() as directory:
        for attempt in range(W4_RUNS):
            path = os.path.join(directory, f"w4-{attempt}.sqlite")
            w4_seed(path)
            child = subprocess.run(
                [sys.executable, "-m", "bench.peers.langgraph_peer", "--w4-turn", path],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(child.stdout)["w4_load_and_turn_ms"])
    return {"w4_load_and_turn_ms": min(runs)}


def w6_answer(state: MessagesState) -> dict[str, list[AIMessage]]:
    text = f"Answer {len(state['messages']) // 2}: it works like this, step by step."
    usage = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
    return {"messages": [AIMessage(text, usage_metadata=usage)]}


def w6_fill(app: Graph) -> None:
    config = {"configurable": {"thread_id": "thread-0", "user_id": "user-0"}}
    for turn in range(W6_MESSAGES // 2):
        text = f"Question {turn} in thread 0: how does this work?"
        app.invoke({"messages": [HumanMessage(text)]}, config)


def w6_invoke() -> dict[str, Any]:
    """W6's turns on one thread: bytes held with ``InMemorySaver`` (tracemalloc, as ours),
    then SQLite file bytes with ``SqliteSaver``, each over ``W6_MESSAGES``."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    app = one_node(w6_answer, InMemorySaver())
    w6_fill(app)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del app
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w6.sqlite")
        connection = sqlite3.connect(path, check_same_thread=False)
        w6_fill(one_node(w6_answer, SqliteSaver(connection)))
        connection.close()
        size = sum(os.path.getsize(f) for f in (path, path + "-wal") if os.path.exists(f))
    return {
        "w6_held_bytes_per_message": round(held / W6_MESSAGES),
        "w6_stored_bytes_per_message": round(size / W6_MESSAGES),
    }


NOTES = {
    "w2_turn_ms": f"turn {W2_TURNS:,}",
    "w6_held_bytes_per_message": f"one thread of {W6_MESSAGES:,}",
    "w6_stored_bytes_per_message": f"one thread of {W6_MESSAGES:,}",
}


if __name__ == "__main__" and sys.argv[1:2] == ["--w4-turn"]:
    print(json.dumps(w4_turn(sys.argv[2])))
