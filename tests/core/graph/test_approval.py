"""HumanApproval: pause before chosen tools; approve, edit or reject; the log stays paired."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import HumanApproval, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock, is_paired
from tenxgraph.errors import ConfigError, StateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer

deleted: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _calls(*calls: ToolCallBlock) -> Message:
    return Message(role="assistant", content=list(calls))


def _app(model: ScriptedModel, approval: HumanApproval) -> Any:
    return create_agent(
        model, [delete_file, read_file], middleware=[approval], checkpointer=InMemoryCheckpointer()
    )


@pytest.fixture(autouse=True)
def _clear() -> None:
    deleted.clear()


def test_pauses_with_every_chosen_call_and_runs_the_approved_one() -> None:
    first = ToolCallBlock(id="c1", name="delete_file", args={"path": "a.txt"})
    second = ToolCallBlock(id="c2", name="read_file", args={"path": "b.txt"})
    third = ToolCallBlock(id="c3", name="delete_file", args={"path": "c.txt"})
    model = ScriptedModel([_calls(first, second, third), "Done."])
    app = _app(model, HumanApproval(["delete_file"], description="Deleting needs a yes."))
    config = {"thread_id": "t"}

    paused = app.invoke({"messages": [("user", "clean up")]}, config)
    value = paused["interrupt"].value
    assert value["type"] == "tool_approval"
    assert [call["id"] for call in value["calls"]] == ["c1", "c3"]
    assert value["allowed"] == ["approve", "edit", "reject"]
    assert value["description"] == "Deleting needs a yes."
    assert deleted == []

    decisions = [{"type": "approve"}, {"type": "reject", "message": "keep c.txt"}]
    result = app.invoke({"resume": {"decisions": decisions}}, config)
    assert result["messages"][-1].text() == "Done."
    assert deleted == ["a.txt"]
    context = app.get_state(config).context
    assert is_paired(context)
    results = {r.call_id: r for m in context for r in m.tool_results()}
    assert results["c1"].output == "deleted a.txt" and not results["c1"].is_error
    assert results["c2"].output == "contents of b.txt"
    assert results["c3"].is_error and "keep c.txt" in results["c3"].output
    seen = model.requests[1].messages  # the model reads the rejection
    assert any("keep c.txt" in m.text() for m in seen if m.role == "tool")


def test_an_edit_runs_the_new_arguments_and_the_model_reads_them() -> None:
    call = ToolCallBlock(id="c1", name="delete_file", args={"path": "important.txt"})
    model = ScriptedModel([_calls(call), "Deleted the scratch file."])
    app = _app(model, HumanApproval(["delete_file"]))
    config = {"thread_id": "edit"}
    app.invoke({"messages": [("user", "delete it")]}, config)

    edit = {"type": "edit", "args": {"path": "scratch.txt"}}
    app.invoke({"resume": {"decisions": [edit]}}, config)
    assert deleted == ["scratch.txt"]
    asked = next(m for m in model.requests[1].messages if m.tool_calls())
    assert asked.tool_calls()[0].args == {"path": "scratch.txt"}
    stored = next(m for m in app.get_state(config).context if m.tool_calls())
    assert stored.metadata["tool_approval"]["c1"]["original_args"] == {"path": "important.txt"}
    assert is_paired(app.get_state(config).context)


def test_rejecting_every_call_goes_back_to_the_model() -> None:
    call = ToolCallBlock(id="c1", name="delete_file", args={"path": "a.txt"})
    model = ScriptedModel([_calls(call), "Understood, I will not delete it."])
    app = _app(model, HumanApproval(lambda c: c.args.get("path", "").endswith(".txt")))
    config = {"thread_id": "reject"}
    app.invoke({"messages": [("user", "delete a.txt")]}, config)
    result = app.invoke({"resume": "reject"}, config)
    assert deleted == []
    assert result["messages"][-1].text() == "Understood, I will not delete it."
    [tool_message] = [m for m in app.get_state(config).context if m.role == "tool"]
    assert "the user rejected this call" in tool_message.text()


def test_a_bad_answer_asks_again_and_changes_nothing() -> None:
    call = ToolCallBlock(id="c1", name="delete_file", args={"path": "a.txt"})
    model = ScriptedModel([_calls(call), "Done."])
    app = _app(model, HumanApproval(["delete_file"], allowed=["approve", "reject"]))
    config = {"thread_id": "bad"}
    app.invoke({"messages": [("user", "delete a.txt")]}, config)
    again = app.invoke({"resume": {"decisions": [{"type": "edit", "args": {}}]}}, config)
    assert "'type' must be one of ['approve', 'reject']" in again["interrupt"].value["error"]
    again = app.invoke({"resume": {"decisions": []}}, config)
    assert "one decision per call (1)" in again["interrupt"].value["error"]
    assert deleted == []
    app.invoke({"resume": "approve"}, config)
    assert deleted == ["a.txt"]


def test_calls_that_arrive_in_the_input_are_reviewed_too() -> None:
    call = ToolCallBlock(id="c1", name="delete_file", args={"path": "a.txt"})
    app = _app(ScriptedModel(["Kept it."]), HumanApproval(["delete_file"]))
    config = {"thread_id": "input"}
    paused = app.invoke({"messages": [("user", "delete a.txt"), _calls(call)]}, config)
    assert paused["interrupt"].value["calls"][0]["id"] == "c1"
    app.invoke({"resume": "reject"}, config)
    assert deleted == []
    assert is_paired(app.get_state(config).context)


def test_a_paused_turn_can_be_discarded_instead() -> None:
    call = ToolCallBlock(id="c1", name="delete_file", args={"path": "a.txt"})
    model = ScriptedModel([_calls(call), "Hello."])
    app = _app(model, HumanApproval(["delete_file"]))
    config = {"thread_id": "moved-on"}
    app.invoke({"messages": [("user", "delete a.txt")]}, config)
    with pytest.raises(StateError, match=r"paused at node 'HumanApproval\.after_model'"):
        app.invoke({"messages": [("user", "never mind, hi")]}, config)
    app.rollback(config)
    app.invoke({"messages": [("user", "never mind, hi")]}, config)
    assert deleted == []
    assert [m.role for m in app.get_state(config).context] == ["user", "assistant"]


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigError):
        HumanApproval([])
    with pytest.raises(ConfigError):
        HumanApproval(["x"], allowed=["edit"])
