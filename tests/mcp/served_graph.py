"""The graph the MCP server tests serve: it answers with how many user messages its thread holds."""

from __future__ import annotations

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm.base import ModelRequest
from tenxgraph.core.llm.testing import FunctionModel


def count(request: ModelRequest) -> str:
    said = [m.text() for m in request.messages if m.role == "user"]
    return f"{len(said)} message(s), last: {said[-1]}"


# compiled without a checkpointer: `tenxgraph serve` and `tenxgraph mcp` recompile it over theirs
graph = create_agent(FunctionModel(count))
