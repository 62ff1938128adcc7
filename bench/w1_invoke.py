"""W1: a 3-node linear graph (START -> a -> b -> c -> END), each node appending one
assistant message, no checkpointer: microseconds per ``invoke``. Target: <= 3x the floor
(``bench.floors.w1_plain_calls``).

Run: ``python -m bench.w1_invoke``.
"""

from __future__ import annotations

from typing import Any

from bench._timing import best_us
from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import Checkpointer
from tenxgraph.utils import END, START


def reply(state: AgentState) -> list[Message]:
    return [Message.text_message("ok", role="assistant")]


def three_nodes(checkpointer: Checkpointer | None = None) -> CompiledGraph[AgentState]:
    """The W1 graph, shared with ``w1_checkpointer`` so both time the same nodes."""
    graph = StateGraph(AgentState)
    for name in ("a", "b", "c"):
        graph.add_node(name, reply)
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", END)
    return graph.compile(checkpointer)


def run() -> dict[str, Any]:
    app = three_nodes()
    question = {"messages": [Message.text_message("hi")]}
    result = app.invoke(question)
    assert len(result["state"].context) == 4
    return {"invoke_us": best_us(lambda: app.invoke(question), number=2_000)}


if __name__ == "__main__":
    print(run())
