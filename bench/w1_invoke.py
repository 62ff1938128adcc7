"""W1: a 3-node linear graph (START -> a -> b -> c -> END), each node appending one
assistant message, no checkpointer: microseconds per ``invoke``. Budget <= 100 us.

Run: ``python -m bench.w1_invoke``.
"""

from __future__ import annotations

from typing import Any

from bench._timing import best_us
from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.utils import END, START


def reply(state: AgentState) -> list[Message]:
    return [Message.text_message("ok", role="assistant")]


def run() -> dict[str, Any]:
    graph = StateGraph(AgentState)
    for name in ("a", "b", "c"):
        graph.add_node(name, reply)
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", END)
    app = graph.compile()
    question = {"messages": [Message.text_message("hi")]}
    result = app.invoke(question)
    assert len(result["state"].context) == 4
    return {"invoke_us": best_us(lambda: app.invoke(question), number=2_000)}


if __name__ == "__main__":
    print(run())
