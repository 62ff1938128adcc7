"""The graph runtime: builder, run loop, Agent and ToolNode.

The exports are imported on first use (see ``tenxgraph.utils._lazy``), each
from the private module that defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "Agent",
    "AgentMiddleware",
    "AgentTool",
    "CheckpointInfo",
    "Command",
    "CompiledGraph",
    "CustomEvent",
    "DrawnEdge",
    "DrawnNode",
    "ErrorEvent",
    "GraphDescription",
    "GraphInterrupt",
    "HumanApproval",
    "InterruptEvent",
    "MessageEvent",
    "ModelCall",
    "MultitaskStrategy",
    "Node",
    "NodeOutput",
    "PendingRemoteCall",
    "RemoteTool",
    "RunContext",
    "RunControl",
    "RunHooks",
    "RunResult",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "StateTree",
    "StreamEvent",
    "StreamWriter",
    "SubgraphEvent",
    "SubgraphNode",
    "ThreadSnapshot",
    "Tool",
    "ToolNode",
    "ToolOutcome",
    "Toolset",
    "UpdateEvent",
    "after_agent",
    "after_model",
    "agent_tool",
    "before_agent",
    "before_model",
    "client_span",
    "create_agent",
    "create_supervisor",
    "create_swarm",
    "get_stream_writer",
    "handoff_tool",
    "interrupt",
    "pending_remote_calls",
    "remote_tool_result",
    "tool",
    "tools_condition",
    "wrap_model_call",
    "wrap_tool_call",
]

if TYPE_CHECKING:
    from tenxgraph.core.graph._agent import Agent
    from tenxgraph.core.graph._agent_tools import AgentTool, agent_tool, create_supervisor
    from tenxgraph.core.graph._approval import HumanApproval
    from tenxgraph.core.graph._builder import StateGraph
    from tenxgraph.core.graph._command import Command
    from tenxgraph.core.graph._compiled import CompiledGraph
    from tenxgraph.core.graph._drawing import DrawnEdge, DrawnNode, GraphDescription
    from tenxgraph.core.graph._events import (
        CustomEvent,
        ErrorEvent,
        InterruptEvent,
        MessageEvent,
        RunResult,
        StreamEvent,
        SubgraphEvent,
        UpdateEvent,
    )
    from tenxgraph.core.graph._handoffs import create_swarm, handoff_tool
    from tenxgraph.core.graph._history import CheckpointInfo, StateSnapshot
    from tenxgraph.core.graph._hooks import RunHooks
    from tenxgraph.core.graph._interrupt import GraphInterrupt, interrupt
    from tenxgraph.core.graph._middleware import (
        AgentMiddleware,
        after_agent,
        after_model,
        before_agent,
        before_model,
        wrap_model_call,
        wrap_tool_call,
    )
    from tenxgraph.core.graph._model_call import ModelCall
    from tenxgraph.core.graph._node import Node, NodeOutput, RunContext
    from tenxgraph.core.graph._prebuilt import create_agent, tools_condition
    from tenxgraph.core.graph._remote_tools import (
        PendingRemoteCall,
        RemoteTool,
        pending_remote_calls,
        remote_tool_result,
    )
    from tenxgraph.core.graph._run_control import RunControl
    from tenxgraph.core.graph._send import Send
    from tenxgraph.core.graph._snapshots import ThreadSnapshot
    from tenxgraph.core.graph._stream_writer import StreamWriter, get_stream_writer
    from tenxgraph.core.graph._subgraph import StateTree, SubgraphNode
    from tenxgraph.core.graph._tool_node import ToolNode, ToolOutcome
    from tenxgraph.core.graph._tools import Tool, tool
    from tenxgraph.core.graph._toolsets import Toolset
    from tenxgraph.core.graph._tracing import client_span
    from tenxgraph.runs import MultitaskStrategy
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.core.graph._agent": ("Agent",),
            "tenxgraph.core.graph._agent_tools": ("AgentTool", "agent_tool", "create_supervisor"),
            "tenxgraph.core.graph._handoffs": ("create_swarm", "handoff_tool"),
            "tenxgraph.core.graph._approval": ("HumanApproval",),
            "tenxgraph.core.graph._builder": ("StateGraph",),
            "tenxgraph.core.graph._command": ("Command",),
            "tenxgraph.core.graph._compiled": ("CompiledGraph",),
            "tenxgraph.core.graph._drawing": ("DrawnEdge", "DrawnNode", "GraphDescription"),
            "tenxgraph.core.graph._events": (
                "CustomEvent",
                "ErrorEvent",
                "InterruptEvent",
                "MessageEvent",
                "RunResult",
                "StreamEvent",
                "SubgraphEvent",
                "UpdateEvent",
            ),
            "tenxgraph.core.graph._history": ("CheckpointInfo", "StateSnapshot"),
            "tenxgraph.core.graph._hooks": ("RunHooks",),
            "tenxgraph.core.graph._interrupt": (
                "GraphInterrupt",
                "interrupt",
            ),
            "tenxgraph.core.graph._middleware": (
                "AgentMiddleware",
                "after_agent",
                "after_model",
                "before_agent",
                "before_model",
                "wrap_model_call",
                "wrap_tool_call",
            ),
            "tenxgraph.core.graph._model_call": ("ModelCall",),
            "tenxgraph.core.graph._node": (
                "Node",
                "NodeOutput",
                "RunContext",
            ),
            "tenxgraph.core.graph._prebuilt": (
                "create_agent",
                "tools_condition",
            ),
            "tenxgraph.core.graph._remote_tools": (
                "PendingRemoteCall",
                "RemoteTool",
                "pending_remote_calls",
                "remote_tool_result",
            ),
            "tenxgraph.core.graph._run_control": ("RunControl",),
            "tenxgraph.core.graph._send": ("Send",),
            "tenxgraph.core.graph._snapshots": ("ThreadSnapshot",),
            "tenxgraph.core.graph._stream_writer": ("StreamWriter", "get_stream_writer"),
            "tenxgraph.core.graph._subgraph": ("StateTree", "SubgraphNode"),
            "tenxgraph.runs._leases": ("MultitaskStrategy",),
            "tenxgraph.core.graph._tool_node": (
                "ToolNode",
                "ToolOutcome",
            ),
            "tenxgraph.core.graph._tools": (
                "Tool",
                "tool",
            ),
            "tenxgraph.core.graph._toolsets": ("Toolset",),
            "tenxgraph.core.graph._tracing": ("client_span",),
        },
    )
