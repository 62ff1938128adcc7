"""HumanApproval guards MCP tools like any tool: pause, edit, reject, through invoke."""

from __future__ import annotations

from typing import Any

from tenxgraph._sync import run_sync
from tenxgraph.core.graph import HumanApproval, create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock, is_paired
from tenxgraph.mcp import MCPTools
from tenxgraph.storage.checkpointer import SqliteCheckpointer


def calls(*calls: tuple[str, str, dict[str, Any]]) -> Message:
    blocks = [ToolCallBlock(id=i, name=n, args=a) for i, n, a in calls]
    return Message(role="assistant", content=blocks)


def test_approval_pauses_before_an_mcp_tool_and_runs_the_edited_call(sdk_command, tmp_path):
    model = ScriptedModel(
        [
            calls(("c1", "add", {"a": 2, "b": 2}), ("c2", "echo", {"text": "hi"})),
            "2 + 3 = 5.",
            calls(("c3", "add", {"a": 1, "b": 1})),
            "Not added.",
        ]
    )
    tools = MCPTools.stdio(*sdk_command, "tools", include=["add", "echo"], name="sdk")
    checkpointer = SqliteCheckpointer(tmp_path / "approval.db")
    app = create_agent(
        model, [tools], middleware=[HumanApproval(["add"])], checkpointer=checkpointer
    )
    config = {"thread_id": "mcp-approval"}
    try:
        paused = app.invoke({"messages": [("user", "add 2 and 2, and echo hi")]}, config)
        value = paused["interrupt"].value
        assert value["calls"] == [{"id": "c1", "name": "add", "args": {"a": 2, "b": 2}}]
        assert [m.role for m in app.get_state(config).context] == ["user", "assistant"]

        edit = {"type": "edit", "args": {"a": 2, "b": 3}}
        result = app.invoke({"resume": {"decisions": [edit]}}, config)
        assert result["messages"][-1].text() == "2 + 3 = 5."
        done = {r.call_id: r for m in result["messages"] for r in m.tool_results()}
        assert done["c1"].output == {"result": 5}  # the server ran the edited arguments
        assert done["c2"].output == {"result": "hi"}  # an unguarded MCP tool ran as usual

        app.invoke({"messages": [("user", "add 1 and 1")]}, config)
        rejected = app.invoke(
            {"resume": {"decisions": [{"type": "reject", "message": "no more sums"}]}}, config
        )
        [no] = [r for m in rejected["messages"] for r in m.tool_results()]
        assert no.is_error and "no more sums" in no.output
        assert rejected["messages"][-1].text() == "Not added."
        state = app.get_state(config)
        assert is_paired(state.context)
        seen = [m.text() for m in model.requests[3].messages if m.role == "tool"]
        assert "no more sums" in seen[-1]  # the model reads the person's reason
    finally:
        run_sync(tools.aclose())
        checkpointer.close()
