"""W3: the runtime's merge of one new message into histories of 1,000, 10,000 and
100,000 messages (``AgentState.append_messages``, the path every node update takes).
Budget <= 20 us at 100,000.

Run: ``python -m bench.w3_merge``.
"""

from __future__ import annotations

from typing import Any

from bench._timing import best_us
from tenxgraph.core.graph._updates import StateSchema
from tenxgraph.core.state import AgentState, Message


def run() -> dict[str, Any]:
    schema = StateSchema(AgentState)
    figures: dict[str, Any] = {}
    for size in (1_000, 10_000, 100_000):
        figures[f"merge_us_at_{size}"] = _merge_one(schema, size)
    return figures


def _merge_one(schema: StateSchema, size: int) -> float:
    state = AgentState()
    state.append_messages([Message.text_message(f"m{i}") for i in range(size)])
    fresh = iter([Message.text_message("new", role="assistant") for _ in range(20_000)])
    return best_us(lambda: schema.apply(state, [next(fresh)], "bench"), number=2_000, repeat=5)


if __name__ == "__main__":
    print(run())
