"""Refused tool-call arguments in the real agent loop: the tool never runs, the model is told."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm.testing import ScriptedModel
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.core.state.tool_arguments import INVALID_TOOL_ARGS_KEY, tool_call
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer

CUT = '{"pattern": "tmp/*.lo'


def _answer(*raw: str, ok: dict[str, Any] | None = None) -> Message:
    """An assistant message as an adapter builds it from calls with these raw arguments."""
    refused: dict[str, Any] = {}
    calls = [tool_call(f"c{i}", "delete_files", text, refused) for i, text in enumerate(raw)]
    if ok is not None:
        calls.append(ToolCallBlock(id="ok", name="delete_files", args=ok))
    return Message(role="assistant", content=calls, metadata={INVALID_TOOL_ARGS_KEY: refused})


class Files:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_files(self, pattern: str = "*") -> str:
        """Delete the files matching ``pattern``."""
        self.deleted.append(pattern)
        return f"deleted {pattern}"


def test_a_cut_off_call_is_answered_with_an_error_and_the_model_tries_again() -> None:
    files = Files()
    model = ScriptedModel([_answer(CUT), _answer('{"pattern": "tmp/*.log"}'), "Done."])
    app = create_agent(model, [files.delete_files], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "t"}

    result = app.invoke({"messages": [Message.text_message("clean tmp")]}, config)

    assert files.deleted == ["tmp/*.log"]  # only the complete second call ran
    saved = app.get_state(config)
    assert saved is not None
    asked, answered = saved.context[1], saved.context[2]
    [error] = answered.tool_results()
    assert (error.call_id, error.is_error, error.status) == ("c0", True, "failed")
    assert error.output == (
        "tool 'delete_files' was not run: the arguments are not valid JSON (Unterminated "
        "string starting at: line 1 column 13 (char 12)). The arguments received were: "
        '\'{"pattern": "tmp/*.lo\'. Call the tool again with the complete arguments as one '
        "JSON object."
    )
    assert asked.metadata[INVALID_TOOL_ARGS_KEY]["c0"]["arguments"] == CUT
    second = model.requests[1].messages
    assert second[-2].tool_calls() == [ToolCallBlock(id="c0", name="delete_files", args={})]
    assert second[-1].tool_results() == [error]
    assert result["messages"][-1].text() == "Done."


def test_only_the_refused_call_of_several_is_skipped() -> None:
    files = Files()
    model = ScriptedModel([_answer("[1, 2]", '"x"', ok={"pattern": "a.txt"}), "Done."])
    app = create_agent(model, [files.delete_files])

    app.invoke({"messages": [Message.text_message("clean")]})

    assert files.deleted == ["a.txt"]
    results = [m.tool_results()[0] for m in model.requests[1].messages if m.role == "tool"]
    assert [(r.call_id, r.is_error) for r in results] == [("c0", True), ("c1", True), ("ok", False)]
    assert "the arguments are an array, not a JSON object" in str(results[0].output)
    assert "'[1, 2]'" in str(results[0].output)
    assert "the arguments are a string, not a JSON object" in str(results[1].output)


def test_arguments_failing_the_tool_schema_are_an_error_result_too() -> None:
    files = Files()
    call = ToolCallBlock(id="c0", name="delete_files", args={"pattern": 7, "force": True})
    model = ScriptedModel([call, "Done."])
    app = create_agent(model, [files.delete_files])

    app.invoke({"messages": [Message.text_message("clean")]})

    assert files.deleted == []
    [result] = model.requests[1].messages[-1].tool_results()
    assert result.is_error
    assert "invalid arguments for tool 'delete_files'" in str(result.output)


def test_refused_calls_stored_by_older_versions_are_still_refused() -> None:
    """Messages once stored the raw text alone: ``{"c0": "{oops"}``."""
    files = Files()
    old = Message(
        role="assistant",
        content=[ToolCallBlock(id="c0", name="delete_files", args={})],
        metadata={INVALID_TOOL_ARGS_KEY: {"c0": "{oops"}},
    )
    model = ScriptedModel([old, "Done."])
    app = create_agent(model, [files.delete_files])

    app.invoke({"messages": [Message.text_message("clean")]})

    assert files.deleted == []
    [result] = model.requests[1].messages[-1].tool_results()
    assert result.is_error
    assert "'{oops'" in str(result.output)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ([1, 2], "the arguments are an array, not a JSON object"),
        ({"pattern": float("nan")}, "the arguments['pattern'] is nan"),
        ({"pattern": "tmp/\ud800"}, "lone surrogate"),
        ('{"pattern": "tmp/*.lo', "not valid JSON"),
    ],
)
def test_direct_calls_refuse_arguments_that_are_not_a_json_object(args: Any, problem: str) -> None:
    files = Files()
    app = create_agent(ScriptedModel([]), [files.delete_files], checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "direct"}

    result = app.call_tool("delete_files", args, config)

    assert files.deleted == []
    assert result.is_error
    assert problem in str(result.output)
    saved = app.get_state(config)
    assert saved is not None
    asked, answered = saved.context
    [call] = asked.tool_calls()
    assert call.args == {}
    assert call.id in asked.metadata[INVALID_TOOL_ARGS_KEY]
    assert answered.tool_results() == [result]


def test_direct_calls_with_valid_arguments_still_run() -> None:
    files = Files()
    app = create_agent(ScriptedModel([]), [files.delete_files])
    assert app.call_tool("delete_files", {"pattern": "x"}, record=False).output == "deleted x"
    assert app.call_tool("delete_files", '{"pattern": "y"}', record=False).output == "deleted y"
    assert files.deleted == ["x", "y"]
