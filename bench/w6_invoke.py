"""W6 through ``invoke``: 100 threads x 1,000 messages filled by real ``app.invoke`` turns
(one user question in, one assistant answer with token usage out) on one compiled graph
with default settings. Targets: <= 400 bytes held per message with
``InMemoryCheckpointer``; stored bytes per message on SQLite at or below openai-agents'
276 (its compact JSON items, measured on this machine for the issue).

Held: what tracemalloc sees allocated after the fill and a ``gc.collect()``, minus what
it saw before the checkpointer and the graph were made, over 100,000 messages. It
counts everything the fill left alive: the store (messages, checkpoints, indexes) and the
compiled graph's warm-thread cache. Also reported: the same after the compiled graph is
dropped (the store alone), and tracemalloc's peak during the fill.

Stored: the same fill on ``SqliteCheckpointer`` (WAL, ``synchronous=NORMAL``), then
the database file plus any WAL left after the checkpointer is closed, over 100,000.

Run: ``python -m bench.w6_invoke``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import tempfile
import tracemalloc
from collections.abc import Callable
from typing import Any, NamedTuple

from tenxgraph.core.graph import CompiledGraph, StateGraph, create_agent
from tenxgraph.core.llm.testing import FunctionModel
from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.message import TokenUsages
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer, SqliteCheckpointer

THREADS = 100
MESSAGES = 1_000  # per thread: 500 turns of question and answer
ANCHOR_STORED_BYTES = 276


def answer(state: AgentState) -> list[Message]:
    usage = TokenUsages(completion_tokens=20, prompt_tokens=100, total_tokens=120)
    text = f"Answer {len(state.context) // 2}: it works like this, step by step."
    return [Message.text_message(text, role="assistant", usages=usage)]


def one_node(checkpointer: Checkpointer) -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    graph.add_node("answer", answer)
    graph.set_entry_point("answer")
    return graph.compile(checkpointer)


def fill(app: CompiledGraph[AgentState]) -> None:
    for thread in range(THREADS):
        config = {"thread_id": f"thread-{thread}", "user_id": f"user-{thread % 10}"}
        for turn in range(MESSAGES // 2):
            text = f"Question {turn} in thread {thread}: how does this work?"
            app.invoke({"messages": [Message.text_message(text)]}, config)


class Traced(NamedTuple):
    """Bytes a fill left alive: with the graph, the store alone, the peak during the fill."""

    held: int
    store_only: int
    peak: int


def traced(build: Callable[[Checkpointer], Any], fill: Callable[[Any], None]) -> Traced:
    """Bytes an in-memory fill left alive (graph alive), then with the graph dropped (the
    store alone), and the peak; ``build`` makes the graph over the store."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    checkpointer = InMemoryCheckpointer()
    app = build(checkpointer)
    fill(app)
    gc.collect()
    after, peak = tracemalloc.get_traced_memory()
    del app
    gc.collect()
    store_only = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return Traced(after - before, store_only - before, peak - before)


def held() -> dict[str, Any]:
    """Bytes alive after an in-memory fill, with and without the compiled graph."""
    bytes_ = traced(one_node, fill)
    total = THREADS * MESSAGES
    return {
        "held_bytes_per_message": round(bytes_.held / total),
        "store_only_bytes_per_message": round(bytes_.store_only / total),
        "peak_bytes_per_message": round(bytes_.peak / total),
    }


def stored() -> dict[str, Any]:
    """SQLite file bytes (with any WAL left) after the same fill and a close."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "w6.sqlite")
        checkpointer = SqliteCheckpointer(path)
        fill(one_node(checkpointer))
        asyncio.run(checkpointer.aclose())
        files = [path, path + "-wal"]
        size = sum(os.path.getsize(file) for file in files if os.path.exists(file))
    return {"stored_bytes_per_message": round(size / (THREADS * MESSAGES))}


LONG_MESSAGES = 10_000
"""One thread built turn by turn: 5,000 questions and answers."""


def held_long(messages: int = LONG_MESSAGES) -> dict[str, Any]:
    """Bytes alive per message after one thread of ``messages`` was built turn by turn.

    The thread grows by ``invoke`` on one compiled graph, one question and one
    answer at a time, so the graph's warm copy of the thread (its live
    messages) stays alive with the store: what a process serving one long
    conversation holds. Also: the same after the compiled graph is dropped.
    """
    config = {"thread_id": "long", "user_id": "user-0"}

    def grow(app: CompiledGraph[AgentState]) -> None:
        for turn in range(messages // 2):
            text = f"Question {turn} in the long thread: how does this work?"
            app.invoke({"messages": [Message.text_message(text)]}, config)

    bytes_ = traced(one_node, grow)
    return {
        "long_thread_messages": messages,
        "long_held_bytes_per_message": round(bytes_.held / messages),
        "long_store_only_bytes_per_message": round(bytes_.store_only / messages),
        "long_peak_bytes_per_message": round(bytes_.peak / messages),
    }


def weather(city: str) -> str:
    """The weather in ``city`` (the agent bench's one tool)."""
    return f"Sunny in {city}, 21 degrees."


def agent_reply(request: Any) -> Message:
    """Every question gets a tool call, then an answer reading its result."""
    usage = TokenUsages(completion_tokens=20, prompt_tokens=100, total_tokens=120)
    if request.messages[-1].role == "user":
        call = ToolCallBlock(
            id=f"call-{len(request.messages)}", name="weather", args={"city": "Paris"}
        )
        return Message(role="assistant", content=[call], usages=usage)
    text = f"Answer {len(request.messages)}: it is sunny, 21 degrees."
    return Message.text_message(text, role="assistant", usages=usage)


def held_agent(messages: int = LONG_MESSAGES) -> dict[str, Any]:
    """``held_long`` through ``create_agent``: each turn is a question, a tool call, its
    result and an answer (four messages), the model a ``FunctionModel`` whose own record
    of requests is cleared every turn (a test double's, not the runtime's)."""
    model = FunctionModel(agent_reply)
    config = {"thread_id": "agent", "user_id": "user-0"}

    def grow(app: CompiledGraph[Any]) -> None:
        for turn in range(messages // 4):
            text = f"Question {turn}: what is the weather in Paris today?"
            app.invoke({"messages": [Message.text_message(text)]}, config)
            model.requests.clear()

    bytes_ = traced(lambda store: create_agent(model, [weather], checkpointer=store), grow)
    return {"agent_held_bytes_per_message": round(bytes_.held / messages)}


def run() -> dict[str, Any]:
    return {
        "threads": THREADS,
        "messages": THREADS * MESSAGES,
        **held(),
        **held_long(),
        **held_agent(),
        **stored(),
        "anchor_stored_bytes_per_message": ANCHOR_STORED_BYTES,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
