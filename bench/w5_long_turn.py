"""W5 (long turn): trim one 10,000-message agentic turn. Budget: <= 50 us for windowed cuts.

The history is a system message and one user question answered through
about 5,000 tool exchanges (an assistant tool call, then its result), built
through ``AgentState.append_messages`` as the runtime merges messages, and
ending right after a tool result, where the Agent trims before its next
model call. Every cut falls inside that single turn: the question stays,
then the most recent exchanges that fit.

Timed (best and median of many repeats, each from the full history again):
``SlidingWindowContextManager(window_size=40)`` (the windowed cut the
budget is for), ``TokenBudgetContextManager(max_tokens=4000)`` and
``MessageContextManager(max_messages=10, max_tokens=4000)`` (token cuts,
which count the kept messages one by one; reported for context).

Run: ``python -m bench.w5_long_turn``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from tenxgraph.core.state import (
    AgentState,
    BaseContextManager,
    Message,
    MessageContextManager,
    SlidingWindowContextManager,
    TokenBudgetContextManager,
    ToolCallBlock,
    ToolResultBlock,
)

MESSAGES = 10_000
REPEATS = 1_000
BUDGET_US = 50.0


def build_turn() -> AgentState:
    """A 10,000-message single turn merged message by message, as the runtime does."""
    state = AgentState()
    state.append_messages(
        [
            Message.text_message("You are a careful research agent.", role="system"),
            Message.text_message("Read every file of the repository and summarize its design."),
        ]
    )
    exchange = 0
    while len(state.context) < MESSAGES:
        call_id = f"call-{exchange}"
        state.append_messages(
            [
                Message(
                    role="assistant",
                    content=[ToolCallBlock(id=call_id, name="read_file", args={"n": exchange})],
                )
            ]
        )
        state.append_messages(
            [
                Message.tool_message(
                    [ToolResultBlock(call_id=call_id, output=f"file {exchange}: " + "x" * 120)]
                )
            ]
        )
        exchange += 1
    return state


async def _time_trims(manager: BaseContextManager, state: AgentState) -> list[int]:
    full = state.context
    samples = []
    for _ in range(REPEATS):
        state.context = full  # the same list again: its message index is still current
        start = time.perf_counter_ns()
        await manager.atrim_context(state)
        samples.append(time.perf_counter_ns() - start)
    state.context = full
    return samples


def _figures(samples: list[int]) -> dict[str, float]:
    return {
        "best_us": round(min(samples) / 1_000, 2),
        "median_us": round(statistics.median(samples) / 1_000, 2),
    }


def run() -> dict[str, Any]:
    """Time the three cuts and check what they keep."""
    state = build_turn()
    full = state.context
    managers: dict[str, BaseContextManager] = {
        "window_40": SlidingWindowContextManager(window_size=40),
        "token_budget_4000": TokenBudgetContextManager(max_tokens=4000),
        "trim_10_turns_4000_tokens": MessageContextManager(max_messages=10, max_tokens=4000),
    }
    figures: dict[str, Any] = {}
    for name, manager in managers.items():
        samples = asyncio.run(_time_trims(manager, state))
        kept = manager.trim_context(AgentState(context=list(full))).context
        assert kept[0].role == "system" and kept[1] is full[1], "the question must stay"
        assert kept[-1] is full[-1] and len(kept) < len(full) // 20
        figures[name] = {**_figures(samples), "kept_messages": len(kept)}
    windowed = figures["window_40"]["best_us"]
    return {
        "workload": "W5 trim one 10,000-message agentic turn (cuts inside the turn)",
        "messages": len(full),
        "repeats": REPEATS,
        **figures,
        "windowed_best_us": windowed,
        "budget_us": BUDGET_US,
        "within_budget": windowed <= BUDGET_US,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
