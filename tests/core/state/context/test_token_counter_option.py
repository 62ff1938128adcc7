"""``token_counter`` is checked when a manager is built (issue 17, bug 5): a value that is
not a counter raises ``ConfigError`` naming the manager, the option and what was given,
instead of silently becoming the default (an empty dict) or failing at the first trim
(a string)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tenxgraph.core.graph import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import (
    AgentState,
    CharEstimateCounter,
    Message,
    SummaryContextManager,
    TokenBudgetContextManager,
)
from tenxgraph.errors import ConfigError

MANAGERS: dict[str, Callable[[Any], Any]] = {
    "TokenBudgetContextManager": lambda counter: TokenBudgetContextManager(
        max_tokens=100, token_counter=counter
    ),
    "SummaryContextManager": lambda counter: SummaryContextManager(
        ScriptedModel([]), token_budget=100, token_counter=counter
    ),
}


class WrongArity:
    def count(self) -> int:
        return 0


def count_words(messages: Sequence[Message]) -> int:
    return sum(len(m.text().split()) for m in messages)


NOT_COUNTERS = [
    pytest.param({}, "{} (dict)", id="empty-dict"),
    pytest.param("cl100k_base", "TiktokenCounter('cl100k_base')", id="string"),
    pytest.param([1, 2], "[1, 2] (list)", id="list"),
    pytest.param(CharEstimateCounter, "pass CharEstimateCounter()", id="class"),
    pytest.param(count_words, "wrap a function in a class", id="function"),
    pytest.param(42, "42 (int): it has no count method", id="int"),
    pytest.param(WrongArity(), "cannot be called with one list", id="wrong-count"),
]


@pytest.mark.parametrize("manager", MANAGERS)
@pytest.mark.parametrize(("value", "detail"), NOT_COUNTERS)
def test_a_value_that_is_not_a_counter_is_refused_when_built(
    manager: str, value: object, detail: str
) -> None:
    with pytest.raises(ConfigError, match=f"^{manager}: token_counter must be") as caught:
        MANAGERS[manager](value)
    assert detail in str(caught.value)
    assert re.search(r"got .+ \(\w+\)", str(caught.value))


@pytest.mark.parametrize("manager", MANAGERS)
def test_none_is_the_default_estimate(manager: str) -> None:
    assert isinstance(MANAGERS[manager](None).token_counter, CharEstimateCounter)


class WordCounter:
    """A user's own counter: any object with count(messages) -> int."""

    def count(self, messages: Sequence[Message]) -> int:
        return count_words(messages)


@pytest.mark.parametrize("manager", MANAGERS)
def test_an_object_with_a_count_method_is_a_counter(manager: str) -> None:
    counter = WordCounter()
    assert MANAGERS[manager](counter).token_counter is counter


def test_a_custom_counter_decides_what_the_model_sees() -> None:
    seen: list[list[str]] = []

    def answer(request: ModelRequest) -> str:
        seen.append([m.text() for m in request.messages])
        return "ok"

    def app_with(counter: Any) -> Any:
        manager = TokenBudgetContextManager(max_tokens=6, token_counter=counter)
        graph = StateGraph(AgentState, context_manager=manager)
        graph.add_node("agent", Agent(FunctionModel(answer), trim_context=True))
        graph.set_entry_point("agent")
        return graph.compile()

    history = [
        Message.text_message("a b c"),
        Message.text_message("ok", role="assistant"),
        Message.text_message("d e"),
    ]
    app_with(WordCounter()).invoke({"messages": history})
    app_with(None).invoke({"messages": history})
    assert seen[0] == ["a b c", "ok", "d e"]  # 6 words fit the budget of 6
    assert seen[1] == ["d e"]  # the default estimate counts 4 tokens of framing a message
