"""tenxgraph: AI agents as graphs over typed, durable conversation state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenxgraph.core.state import AgentState, Message, ToolResult
from tenxgraph.utils.constants import END, START

__all__ = [
    "END",
    "START",
    "Agent",
    "AgentState",
    "CompiledGraph",
    "Message",
    "StateGraph",
    "ToolNode",
    "ToolResult",
    "create_agent",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from tenxgraph.core.graph import Agent, CompiledGraph, StateGraph, ToolNode, create_agent

_RUNTIME = frozenset({"Agent", "CompiledGraph", "StateGraph", "ToolNode", "create_agent"})


def __getattr__(name: str) -> Any:
    """Import the runtime on first use."""
    if name in _RUNTIME:
        from tenxgraph.core import graph

        return getattr(graph, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
