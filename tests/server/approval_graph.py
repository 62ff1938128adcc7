"""An offline agent whose file deletions wait for a person's approval (``HumanApproval``).

A ``FunctionModel`` reads the last message: "delete <path>" calls
``delete_file(path)``; after a tool result it says what the tool answered.
Served by ``tenxgraph serve tests.server.approval_graph:graph`` for the web
page and the official LangGraph SDK.
"""

from __future__ import annotations

import uuid

from tenxgraph.core.graph import HumanApproval, create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.llm.testing import ModelReply
from tenxgraph.core.state import Message, ToolCallBlock

GRAPH_ID = "approval"


def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


def _answer(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return f"delete_file said: {last.text()}"
    text = last.text()
    if text.startswith("delete "):
        call = ToolCallBlock(
            id=f"call_{uuid.uuid4().hex[:12]}", name="delete_file", args={"path": text[7:]}
        )
        return Message(role="assistant", content=[call])
    return f"said: {text}"


graph = create_agent(
    FunctionModel(_answer),
    [delete_file],
    middleware=[HumanApproval(["delete_file"], description="Delete this file?")],
)
