"""Rolling summaries append (issue 18, item 4): earlier parts survive verbatim until compaction."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tenxgraph.core.graph import Agent, StateGraph
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import AgentState, Message, SummaryContextManager, ThreadKey
from tenxgraph.core.state.context.summary import (
    DEFAULT_COMPACTION_PROMPT,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_SUMMARY_PROMPT,
)
from tenxgraph.errors import ConfigError
from tenxgraph.storage.checkpointer import SqliteCheckpointer

from .convo import ids, state_of, tool_turn

FIRST = "The user, Ada, lives in Lyon and wants a quote for 12 chairs by Friday."


class Summarizer:
    """Answers summarization and compaction requests differently, and records which came."""

    def __init__(self, parts: list[str], compacted: str = "compacted") -> None:
        self.parts = iter(parts)
        self.compacted = compacted
        self.tasks: list[str] = []

    def __call__(self, request: ModelRequest) -> str:
        if request.messages[0].text() == DEFAULT_COMPACTION_PROMPT:
            self.tasks.append("compact")
            return self.compacted
        self.tasks.append("summarize")
        return next(self.parts)


def test_two_rounds_keep_the_first_summary_verbatim() -> None:
    summarizer = Summarizer([FIRST, "They then asked for oak instead of pine."])
    model = FunctionModel(summarizer)
    manager = SummaryContextManager(model, max_messages=6, keep_recent=4)
    state = state_of([m for n in range(2) for m in tool_turn(n)])
    manager.trim_context(state)
    assert state.context_summary == FIRST

    state.append_messages([m for n in range(2, 4) for m in tool_turn(n)])
    manager.trim_context(state)
    assert state.context_summary is not None
    assert state.context_summary.startswith(FIRST)  # word for word, at the start
    assert state.context_summary == FIRST + "\n\nThey then asked for oak instead of pine."
    # the second request sees the first summary as context and only the new messages
    request = model.requests[1]
    assert request.messages[0].text() == DEFAULT_SUMMARY_PROMPT
    transcript = request.messages[1].text()
    assert transcript.startswith(f"Summary of the conversation so far:\n{FIRST}\n")
    assert "question 0" not in transcript and "question 1" in transcript
    assert summarizer.tasks == ["summarize", "summarize"]  # under the cap: no compaction


def test_the_default_prompt_asks_for_an_addition_not_a_rewrite() -> None:
    assert "appended" in DEFAULT_SUMMARY_PROMPT
    assert "do not repeat" in DEFAULT_SUMMARY_PROMPT


def test_the_summary_is_compacted_when_it_passes_its_cap() -> None:
    part = "x" * 200  # about 50 tokens each
    summarizer = Summarizer([part, part, part], compacted="the short version")
    model = FunctionModel(summarizer)
    manager = SummaryContextManager(model, max_messages=4, keep_recent=2, max_summary_tokens=120)
    state = state_of(tool_turn(0))
    for n in range(1, 4):
        state.append_messages(tool_turn(n))
        manager.trim_context(state)
        if n < 3:
            assert state.context_summary == "\n\n".join([part] * n)  # under the cap
    assert summarizer.tasks == ["summarize", "summarize", "summarize", "compact"]
    assert state.context_summary == "the short version"
    compaction = model.requests[-1]
    assert [m.role for m in compaction.messages] == ["system", "user"]
    assert compaction.messages[1].text() == "\n\n".join([part] * 3)  # the whole summary
    assert manager.summary_tokens(state.context_summary) <= 120


def test_the_cap_counts_the_summary_as_it_is_sent() -> None:
    manager = SummaryContextManager(ScriptedModel([]), max_summary_tokens=100)
    # "Summary of the earlier conversation:\n" plus the text, plus the per-message overhead
    assert manager.summary_tokens("") > 0
    assert manager.summary_tokens("y" * 400) == manager.summary_tokens("") + 100


def test_a_failed_compaction_keeps_the_appended_summary_and_retries_next_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    part = "y" * 400
    replies: list[object] = [part, part, RuntimeError("summarizer down"), part, "compacted"]
    model = ScriptedModel(replies)  # type: ignore[arg-type]
    manager = SummaryContextManager(model, max_messages=4, keep_recent=2, max_summary_tokens=150)
    state = state_of(tool_turn(0))
    state.append_messages(tool_turn(1))
    manager.trim_context(state)
    assert state.context_summary == part
    state.append_messages(tool_turn(2))
    with caplog.at_level(logging.WARNING, logger="tenxgraph.core.state.context.summary"):
        manager.trim_context(state)
    assert state.context_summary == f"{part}\n\n{part}"  # nothing lost, over the cap
    assert "compaction failed" in caplog.text
    assert len(state.context) == 4
    state.append_messages(tool_turn(3))
    manager.trim_context(state)
    assert state.context_summary == "compacted"
    model.assert_consumed()


def test_a_compaction_that_does_not_shorten_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    part = "z" * 400
    model = ScriptedModel([part, part, "w" * 2000])
    manager = SummaryContextManager(model, max_messages=4, keep_recent=2, max_summary_tokens=150)
    state = state_of([*tool_turn(0), *tool_turn(1)])
    manager.trim_context(state)
    state.append_messages(tool_turn(2))
    with caplog.at_level(logging.WARNING, logger="tenxgraph.core.state.context.summary"):
        manager.trim_context(state)
    assert state.context_summary == f"{part}\n\n{part}"
    assert "kept as it was" in caplog.text


def test_without_a_cap_the_summary_only_grows() -> None:
    parts = [f"part {n}: " + "q" * 3000 for n in range(3)]
    model = ScriptedModel(parts)
    manager = SummaryContextManager(model, max_messages=4, keep_recent=2, max_summary_tokens=None)
    state = state_of(tool_turn(0))
    for n in range(1, 4):
        state.append_messages(tool_turn(n))
        manager.trim_context(state)
    assert state.context_summary == "\n\n".join(parts)
    model.assert_consumed()


def test_a_failed_summarization_changes_neither_the_state_nor_the_stored_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failing = False

    def summarize(request: ModelRequest) -> str:
        if failing:
            raise RuntimeError("summarizer unavailable")
        return FIRST

    seen: list[list[Message]] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request.messages)
        return "ok"

    checkpointer = SqliteCheckpointer(tmp_path / "thread.sqlite")
    manager = SummaryContextManager(FunctionModel(summarize), max_messages=4, keep_recent=2)
    graph = StateGraph(AgentState, context_manager=manager)
    graph.add_node("agent", Agent(FunctionModel(answer), trim_context=True))
    graph.set_entry_point("agent")
    app = graph.compile(checkpointer)
    config = {"thread_id": "t"}
    for text in ("one", "two", "three"):
        app.invoke({"messages": [("user", text)]}, config)
    before = app.get_state(config)
    assert before is not None and before.context_summary == FIRST

    failing = True
    with caplog.at_level(logging.WARNING, logger="tenxgraph.core.state.context.summary"):
        app.invoke({"messages": [("user", "four")]}, config)
    after = app.get_state(config)
    assert after is not None
    assert after.context_summary == FIRST  # not emptied, not rewritten
    added = after.context[len(before.context) :]
    assert ids(after.context[: len(before.context)]) == ids(before.context)  # nothing dropped
    assert [m.text() for m in added] == ["four", "ok"]
    assert "context is left unchanged" in caplog.text
    log = asyncio.run(checkpointer.alist_messages(ThreadKey("t")))
    texts = [s.message.text() for s in log if s.message.role == "user"]
    assert texts == ["one", "two", "three", "four"]  # the log keeps every message
    # the answering model still saw the summary, with its documented prefix
    summary = seen[-1][0]
    assert summary.role == "assistant" and summary.metadata == {"context_summary": True}
    assert summary.text() == f"Summary of the earlier conversation:\n{FIRST}"
    asyncio.run(checkpointer.aclose())


def test_the_reference_signature_and_defaults_are_kept() -> None:
    manager = SummaryContextManager("gemini-2.0-flash")
    assert (manager.max_messages, manager.token_budget, manager.keep_recent) == (30, None, 8)
    assert manager.remove_tool_msgs is False
    assert manager.max_summary_tokens == DEFAULT_MAX_SUMMARY_TOKENS
    positional = SummaryContextManager("m", 10, 500, 3, True, "prompt")
    assert (positional.max_messages, positional.token_budget, positional.keep_recent) == (
        10,
        500,
        3,
    )
    with pytest.raises(TypeError):
        SummaryContextManager("m", 10, 500, 3, True, "prompt", None, 100)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_summary_tokens": 0}, "max_summary_tokens"),
        ({"max_summary_tokens": True}, "max_summary_tokens"),
        ({"compaction_prompt": "  "}, "compaction_prompt"),
        ({"compaction_prompt": None}, "compaction_prompt"),
    ],
)
def test_bad_compaction_settings_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=f"SummaryContextManager: {match}"):
        SummaryContextManager("m", **kwargs)  # type: ignore[arg-type]
