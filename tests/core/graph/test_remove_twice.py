"""Removing a message id twice in one update is a no-op (LangGraph's rule; issue 17).

One update is what one node returns: a list of edits, or all the
``ToolResult.state`` updates of one ToolNode step. An id that was never in
the context, or that an earlier step removed, is still an error.
"""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.state import (
    REMOVE_ALL_MESSAGES,
    AgentState,
    Message,
    RemoveMessage,
    ToolCallBlock,
    ToolResult,
)
from tenxgraph.errors import NodeError


def run_node(node: Any, *texts: str) -> list[str]:
    graph = StateGraph(AgentState)
    graph.add_node("edit", node)
    graph.set_entry_point("edit")
    seed = [Message.text_message(text, message_id=text) for text in texts]
    result = graph.compile().invoke({"messages": seed})
    return [m.text() for m in result["state"].context]


def test_one_list_may_remove_an_id_twice() -> None:
    assert run_node(lambda s: [RemoveMessage("a"), RemoveMessage("a")], "a", "b") == ["b"]


def test_an_id_removed_by_remove_all_may_be_removed_again() -> None:
    edits = [RemoveMessage(REMOVE_ALL_MESSAGES), RemoveMessage("a"), Message.text_message("c")]
    assert run_node(lambda s: edits, "a", "b") == ["c"]


def test_a_message_added_again_after_its_removal_can_be_removed_again() -> None:
    again = Message.text_message("a again", message_id="a")
    edits = [RemoveMessage("a"), again, RemoveMessage("a")]
    assert run_node(lambda s: edits, "a", "b") == ["b"]


def test_two_tool_calls_of_one_step_may_forget_the_same_message() -> None:
    def forget(message_id: str) -> ToolResult:
        """Forget a message."""
        return ToolResult(message="forgotten", state={"context": [RemoveMessage(message_id)]})

    calls = [ToolCallBlock(id=f"c{i}", name="forget", args={"message_id": "s"}) for i in (1, 2)]
    graph = StateGraph(AgentState)
    graph.add_node("tools", ToolNode([forget]))
    graph.set_entry_point("tools")
    secret = Message.text_message("secret", message_id="s")
    result = graph.compile().invoke(
        {"messages": [secret, Message(role="assistant", content=calls)]}
    )

    context = result["state"].context
    assert [m.role for m in context] == ["assistant", "tool", "tool"]
    assert all(not b.is_error for m in context for b in m.tool_results())


def test_an_id_an_earlier_step_removed_is_still_an_error() -> None:
    graph = StateGraph(AgentState)
    graph.add_node("first", lambda s: [RemoveMessage("a")])
    graph.add_node("second", lambda s: [RemoveMessage("a")])
    graph.set_entry_point("first")
    graph.add_edge("first", "second")
    with pytest.raises(NodeError, match="cannot remove message 'a': it is not in the context"):
        graph.compile().invoke({"messages": [Message.text_message("a", message_id="a")]})
