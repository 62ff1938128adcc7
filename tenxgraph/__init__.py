"""tenxgraph: AI agents as graphs over typed, durable conversation state.

The exports are imported on first use (see ``tenxgraph.utils._lazy``):
``import tenxgraph`` loads neither pydantic nor the run loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    from tenxgraph.core.state.agent_state import AgentState
    from tenxgraph.core.state.message import Message
    from tenxgraph.core.state.tool_result import ToolResult
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.core.graph": (
                "Agent",
                "CompiledGraph",
                "StateGraph",
                "ToolNode",
                "create_agent",
            ),
            "tenxgraph.core.state.agent_state": ("AgentState",),
            "tenxgraph.core.state.message": ("Message",),
            "tenxgraph.core.state.tool_result": ("ToolResult",),
        },
    )
