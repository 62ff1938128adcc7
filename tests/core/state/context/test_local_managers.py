"""Managers that need no I/O trim on the sync path directly, and overrides still apply."""

from __future__ import annotations

import asyncio

import pytest

from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.context import (
    MessageContextManager,
    SlidingWindowContextManager,
    TokenBudgetContextManager,
)
from tenxgraph.core.state.context.base import BaseContextManager


def conversation(turns: int) -> AgentState:
    state = AgentState()
    for turn in range(turns):
        state.append_messages(
            [
                Message.text_message(f"question {turn}"),
                Message.text_message(f"answer {turn}", role="assistant"),
            ]
        )
    return state


@pytest.mark.parametrize(
    "manager",
    [
        MessageContextManager(max_messages=2),
        SlidingWindowContextManager(window_size=4),
        TokenBudgetContextManager(max_tokens=12),
    ],
    ids=repr,
)
def test_sync_and_async_trims_agree(manager: BaseContextManager) -> None:
    synced = manager.trim_context(conversation(6))
    awaited = asyncio.run(manager.atrim_context(conversation(6)))
    assert [m.text() for m in synced.context] == [m.text() for m in awaited.context]
    assert 0 < len(synced.context) < 12


def test_sync_trim_runs_inside_a_running_loop_without_a_helper_thread() -> None:
    async def from_async_code() -> int:
        return len(MessageContextManager(max_messages=1).trim_context(conversation(3)).context)

    assert asyncio.run(from_async_code()) == 2


def test_an_overridden_async_trim_is_used_by_the_sync_twin() -> None:
    class Marking(MessageContextManager):
        async def atrim_context(self, state: AgentState) -> AgentState:
            state = await super().atrim_context(state)
            state.context_summary = "trimmed by the override"
            return state

    state = Marking(max_messages=1).trim_context(conversation(3))
    assert state.context_summary == "trimmed by the override"
    assert [m.text() for m in state.context] == ["question 2", "answer 2"]
