from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import (
    DEFAULT_SUMMARY_PROMPT,
    ErrorBlock,
    Message,
    SummaryContextManager,
    TextBlock,
    is_paired,
)

from .convo import assistant, calls, ids, results, roles, state_of, system, tool_turn, user


def test_below_both_thresholds_the_model_is_not_called() -> None:
    model = ScriptedModel([])
    state = state_of([m for n in range(3) for m in tool_turn(n)])  # 12 messages
    before = state.context
    SummaryContextManager(model=model, max_messages=12, keep_recent=4).trim_context(state)
    assert model.requests == []
    assert state.context is before and state.context_summary is None


def test_summarizes_old_messages_and_keeps_recent_ones_verbatim() -> None:
    prompt = system("You are a travel agent.")
    old = [
        user("Weather in Tokyo?"),
        calls("w1", name="get_weather"),
        results("w1", output="Cloudy, 18C"),
        assistant("It is cloudy and 18C."),
    ]
    recent = [m for n in range(2) for m in tool_turn(n)]
    state = state_of([prompt, *old, *recent])
    model = ScriptedModel(["The user asked about Tokyo: cloudy, 18C."])
    SummaryContextManager(model=model, max_messages=10, keep_recent=8).trim_context(state)

    assert state.context_summary == "The user asked about Tokyo: cloudy, 18C."
    assert ids(state.context) == ids([prompt, *recent])
    (request,) = model.requests
    assert roles(request.messages) == ["system", "user"]
    assert request.messages[0].text() == DEFAULT_SUMMARY_PROMPT
    transcript = request.messages[1].text()
    # the summarizer sees tool calls with their arguments and the results
    assert "User: Weather in Tokyo?" in transcript
    assert 'get_weather (call w1) with {"query": "w1"}' in transcript
    assert "result of get_weather (call w1): Cloudy, 18C" in transcript
    assert "You are a travel agent." not in transcript  # system messages are never summarized
    assert "question 0" not in transcript  # the kept messages are not summarized


def test_each_summary_is_appended_to_the_previous_one() -> None:
    replies = iter(["summary one", "summary two"])

    def summarize(request: ModelRequest) -> str:
        return next(replies)

    model = FunctionModel(summarize)
    manager = SummaryContextManager(model=model, max_messages=6, keep_recent=4)
    state = state_of([m for n in range(2) for m in tool_turn(n)])  # 8 messages
    manager.trim_context(state)
    assert state.context_summary == "summary one"
    assert len(state.context) == 4

    state.append_messages([m for n in range(2, 4) for m in tool_turn(n)])
    manager.trim_context(state)
    assert state.context_summary == "summary one\n\nsummary two"  # appended, not replaced
    second = model.requests[1].messages[1].text()
    assert second.startswith("Summary of the conversation so far:\nsummary one\n")
    assert "question 1" in second and "question 2" in second


def test_keep_recent_moves_back_to_the_start_of_a_tool_group() -> None:
    group = [calls("a", "b", "c"), results("a"), results("b"), results("c")]
    history = [user("compare"), *group, assistant("a is best"), user("thanks"), assistant("bye")]
    state = state_of(history)
    # the 4th most recent message is result "c"; the cut moves back to the call message
    SummaryContextManager(model=ScriptedModel(["s"]), max_messages=5, keep_recent=4).trim_context(
        state
    )
    assert ids(state.context) == ids(history[1:])
    assert is_paired(state.context)
    assert state.context_summary == "s"


def test_a_cut_inside_the_current_turn_keeps_its_question() -> None:
    current = [
        user("research this"),
        *[m for i in range(5) for m in (calls(f"r{i}"), results(f"r{i}"))],
    ]
    state = state_of([*tool_turn(0), *tool_turn(1), *current])
    model = ScriptedModel(["summary"])
    SummaryContextManager(model=model, max_messages=5, keep_recent=2).trim_context(state)
    assert ids(state.context) == ids([current[0], *current[-2:]])  # question + last exchange
    assert state.context_summary == "summary"
    assert "research this" not in model.requests[0].messages[-1].text()  # not summarized


@pytest.mark.parametrize(
    "reply",
    [
        RuntimeError("provider down"),
        "",
        "   ",
        Message(role="assistant", content=[ErrorBlock(message="quota exceeded")]),
        Message(
            role="assistant",
            content=[TextBlock(text="Error: "), ErrorBlock(message="quota exceeded")],
        ),
    ],
)
def test_a_failed_summarization_leaves_everything_unchanged(
    reply: object, caplog: pytest.LogCaptureFixture
) -> None:
    state = state_of([m for n in range(4) for m in tool_turn(n)])
    state.context_summary = "earlier summary"
    before = state.context
    model = ScriptedModel([reply])  # type: ignore[list-item]
    with caplog.at_level(logging.WARNING, logger="tenxgraph.core.state.context.summary"):
        SummaryContextManager(model=model, max_messages=5, keep_recent=4).trim_context(state)
    assert len(model.requests) == 1
    assert state.context is before
    assert state.context_summary == "earlier summary"
    assert "context is left unchanged" in caplog.text


def test_token_budget_triggers_summarization() -> None:
    state = state_of([user("x" * 400), assistant("y" * 400), user("z")])
    model = ScriptedModel(["long exchange about x and y"])
    manager = SummaryContextManager(model=model, max_messages=None, token_budget=150, keep_recent=1)
    manager.trim_context(state)
    assert state.context_summary == "long exchange about x and y"
    assert [m.text() for m in state.context] == ["z"]
    under = SummaryContextManager(model=ScriptedModel([]), max_messages=None, token_budget=10_000)
    assert not under.should_summarize(state_of([user("x" * 400)]).context)


def test_remove_tool_msgs_strips_the_kept_completed_turns() -> None:
    history = [*tool_turn(0), *tool_turn(1), *tool_turn(2), user("now"), calls("n"), results("n")]
    state = state_of(history)
    manager = SummaryContextManager(
        model=ScriptedModel(["s"]), max_messages=10, keep_recent=8, remove_tool_msgs=True
    )
    manager.trim_context(state)
    # kept verbatim: "answer 1", turn 2, the current turn; tool traffic goes but for the current
    assert ids(state.context) == ids([history[7], history[8], history[11], *history[12:]])
    assert roles(state.context) == ["assistant", "user", "assistant", "user", "assistant", "tool"]
    assert is_paired(state.context)


async def test_overflow_reduction_summarizes_with_half_as_many_recent_messages() -> None:
    history = [m for n in range(3) for m in tool_turn(n)]
    state = state_of(history)
    model = ScriptedModel(["compressed"])
    manager = SummaryContextManager(model=model, max_messages=100, keep_recent=8)
    assert await manager.areduce_context(state)
    assert state.context_summary == "compressed"
    assert ids(state.context) == ids(history[-4:])


def test_the_001_example_constructs_as_written() -> None:
    context_manager = SummaryContextManager(
        model="gemini-2.0-flash",
        max_messages=30,  # summarize when > 30 messages
        token_budget=8000,  # or when > 8000 est. tokens
        keep_recent=8,  # preserve the last 8 messages
        remove_tool_msgs=False,
    )
    assert context_manager.model == "gemini-2.0-flash"
    assert context_manager.summary_prompt == DEFAULT_SUMMARY_PROMPT


def test_custom_summary_prompt_is_sent() -> None:
    model = ScriptedModel(["ok"])
    manager = SummaryContextManager(model=model, max_messages=2, keep_recent=1, summary_prompt="P")
    manager.trim_context(state_of([user("a"), assistant("b"), user("c")]))
    assert model.requests[0].messages[0].text() == "P"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_messages": 0}, "max_messages"),
        ({"token_budget": -5}, "token_budget"),
        ({"keep_recent": -1}, "keep_recent"),
        ({"summary_prompt": " "}, "summary_prompt"),
    ],
)
def test_bad_settings_are_refused_clearly(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=f"SummaryContextManager: {match}"):
        SummaryContextManager(model="m", **kwargs)  # type: ignore[arg-type]


def test_importing_the_state_layer_imports_no_model_code_or_tiktoken() -> None:
    code = (
        "import sys, tenxgraph.core.state\n"
        "bad = [m for m in sys.modules if m.startswith('tenxgraph.core.llm') or m == 'tiktoken']\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
