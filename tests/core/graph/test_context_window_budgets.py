"""Budgets relative to the model's context window, and compressing before a request would
overflow (issue 18 item 3), through the Agent."""

from __future__ import annotations

import logging

import pytest

from tenxgraph.core.graph import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.llm._windows import known_context_window
from tenxgraph.core.state import (
    AgentState,
    BaseContextManager,
    CharEstimateCounter,
    Message,
    MessageContextManager,
    SlidingWindowContextManager,
    TokenBudgetContextManager,
    ToolCallBlock,
    ToolResultBlock,
    is_paired,
)
from tenxgraph.errors import ConfigError

COUNTER = CharEstimateCounter()


def long_turn(exchanges: int, output_chars: int) -> list[Message]:
    messages = [Message.text_message("Audit the code base.")]
    for n in range(exchanges):
        messages.append(
            Message(role="assistant", content=[ToolCallBlock(id=f"c{n}", name="read", args={})])
        )
        messages.append(
            Message.tool_message([ToolResultBlock(call_id=f"c{n}", output="x" * output_chars)])
        )
    return messages


def run(manager: BaseContextManager, window: int | None, turn: list[Message]) -> list[int]:
    """Run one Agent step; return the estimated tokens of each request the model got."""
    sizes: list[int] = []

    def answer(request: ModelRequest) -> str:
        sizes.append(COUNTER.count(request.messages))
        assert is_paired(request.messages)
        return "done"

    model = FunctionModel(answer)
    model.context_window = window
    graph = StateGraph(AgentState, context_manager=manager)
    graph.add_node("agent", Agent(model, trim_context=True))
    graph.set_entry_point("agent")
    graph.compile().invoke({"messages": turn})
    return sizes


def test_a_fraction_of_the_models_window_is_the_budget() -> None:
    turn = long_turn(exchanges=40, output_chars=400)  # about 4,500 tokens
    (size,) = run(TokenBudgetContextManager(max_tokens=0.25), 8_000, turn)
    assert size <= 2_000
    (size,) = run(SlidingWindowContextManager(window_size=500, max_tokens=0.5), 8_000, turn)
    assert 2_000 < size <= 4_000
    (size,) = run(MessageContextManager(max_tokens=0.5, context_window=2_000), None, turn)
    assert size <= 1_000  # the manager's own context_window wins


def test_without_a_known_window_a_fraction_is_off_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    turn = long_turn(exchanges=10, output_chars=400)
    with caplog.at_level(logging.WARNING, logger="tenxgraph.context"):
        (size,) = run(TokenBudgetContextManager(max_tokens=0.1), None, turn)
    assert size == COUNTER.count(turn)
    assert "not known yet" in caplog.text


def test_proactive_compression_before_the_request_would_overflow() -> None:
    turn = long_turn(exchanges=30, output_chars=2_000)  # about 15,700 tokens
    manager = MessageContextManager(max_messages=10, proactive_at=0.8)
    (size,) = run(manager, 10_000, turn)
    assert size <= 8_000  # reduced before sending: the model never saw an oversized request
    (size,) = run(MessageContextManager(max_messages=10), 10_000, turn)
    assert size > 10_000  # without the option the request goes as it is


def test_messages_or_tokens_whichever_is_passed_first() -> None:
    turn = long_turn(exchanges=40, output_chars=40)
    manager = SlidingWindowContextManager(window_size=10, max_tokens=10_000)
    state = AgentState()
    state.append_messages(turn)
    assert len(manager.trim_context(state).context) == 9  # the question + 4 exchanges
    manager = SlidingWindowContextManager(window_size=1_000, max_tokens=100)
    state = AgentState()
    state.append_messages(turn)
    assert COUNTER.count(manager.trim_context(state).context) <= 100


def test_known_windows_and_told_ones() -> None:
    assert known_context_window("gpt-4o") == 128_000
    assert known_context_window("claude-opus-4-7") == 200_000
    assert known_context_window("models/gemini-2.5-flash") == 1_048_576
    assert known_context_window("my-local-model") is None
    model = FunctionModel(lambda request: "ok")
    assert model.context_window is None
    model.context_window = 32_000
    assert model.context_window == 32_000
    with pytest.raises(ConfigError, match="context_window"):
        model.context_window = 0
    with pytest.raises(ConfigError, match="max_tokens"):
        TokenBudgetContextManager(max_tokens=1.5)
    with pytest.raises(ConfigError, match="proactive_at"):
        MessageContextManager(proactive_at=2)  # type: ignore[arg-type]


def test_the_summary_budget_may_be_a_fraction_of_the_window() -> None:
    from tenxgraph.core.state import SummaryContextManager

    summarizer = FunctionModel(lambda request: "the audit so far")
    manager = SummaryContextManager(summarizer, max_messages=None, token_budget=0.5, keep_recent=4)
    turn = long_turn(exchanges=20, output_chars=400)  # about 2,300 tokens
    (size,) = run(manager, 2_000, turn)  # over half of 2,000: summarized first
    assert size < 1_000
    (size,) = run(
        SummaryContextManager(summarizer, max_messages=None, token_budget=0.5, keep_recent=4),
        100_000,
        turn,
    )
    assert size == COUNTER.count(turn)  # under half of 100,000: sent as it is
