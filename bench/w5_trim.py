"""W5: trim a 10,000-message history to the last 10 user turns. Budget: <= 50 us.

The history (a system message, then turns of user question, assistant tool
call, tool result and assistant answer) is built through
``AgentState.append_messages``, one message at a time as the runtime merges
them, and ends right after a tool result, where the Agent trims before its
next model call. Timed: ``await MessageContextManager(10).atrim_context(state)``
inside a running loop, as the runtime awaits it; best and median of many
repeats, each starting again from the full history.

Also reported, for context: the first trim after a thread is loaded (the
message index is built then, once) and the sync entry point ``trim_context``.

Run: ``python -m bench.w5_trim``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

from tenxgraph.core.state import (
    AgentState,
    Message,
    MessageContextManager,
    ToolCallBlock,
    ToolResultBlock,
)

MESSAGES = 10_000
TURNS_KEPT = 10
REPEATS = 2_000
BUDGET_US = 50.0


def build_history() -> AgentState:
    """A 10,000-message state merged message by message, as the runtime does."""
    state = AgentState()
    state.append_messages([Message.text_message("You are a helpful agent.", role="system")])
    turn = 0
    while len(state.context) < MESSAGES:
        call_id = f"call-{turn}"
        for message in (
            Message.text_message(f"Question {turn}: what is the weather in city {turn}?"),
            Message(
                role="assistant",
                content=[ToolCallBlock(id=call_id, name="get_weather", args={"city": turn})],
            ),
            Message.tool_message([ToolResultBlock(call_id=call_id, output=f"Sunny, {turn % 30}C")]),
            Message.text_message(f"It is sunny in city {turn}.", role="assistant"),
        ):
            if len(state.context) < MESSAGES:
                state.append_messages([message])
        turn += 1
    return state


async def _time_trims(manager: MessageContextManager, state: AgentState) -> list[int]:
    full = state.context
    samples = []
    for _ in range(REPEATS):
        state.context = full  # the same list again: its message index is still current
        start = time.perf_counter_ns()
        await manager.atrim_context(state)
        samples.append(time.perf_counter_ns() - start)
    return samples


async def _time_once(manager: MessageContextManager, state: AgentState) -> int:
    start = time.perf_counter_ns()
    await manager.atrim_context(state)
    return time.perf_counter_ns() - start


def run() -> dict[str, Any]:
    """Time the trim and check its result."""
    state = build_history()
    full = state.context
    manager = MessageContextManager(max_messages=TURNS_KEPT)
    samples = asyncio.run(_time_trims(manager, state))
    kept = state.context
    users = sum(message.role == "user" for message in kept)
    assert users == TURNS_KEPT, f"kept {users} user turns"
    assert kept[0].role == "system" and len(full) == MESSAGES

    first_after_load = min(  # as after loading a thread: the index is built once, here
        asyncio.run(_time_once(manager, AgentState(context=list(full)))) for _ in range(5)
    )

    manager.trim_context(state)  # warm the sync bridge's loop
    sync_samples = []
    for _ in range(200):
        state.context = full
        start = time.perf_counter_ns()
        manager.trim_context(state)
        sync_samples.append(time.perf_counter_ns() - start)

    best = min(samples) / 1_000
    return {
        "workload": "W5 trim 10,000 messages to the last 10 user turns",
        "messages": len(full),
        "kept_messages": len(kept),
        "repeats": REPEATS,
        "trim_best_us": round(best, 2),
        "trim_median_us": round(statistics.median(samples) / 1_000, 2),
        "first_trim_after_load_us": round(first_after_load / 1_000, 1),
        "sync_trim_context_best_us": round(min(sync_samples) / 1_000, 2),
        "budget_us": BUDGET_US,
        "within_budget": best <= BUDGET_US,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
