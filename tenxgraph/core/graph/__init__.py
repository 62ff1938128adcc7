"""The graph runtime: builder, run loop, Agent and ToolNode."""

from tenxgraph.core.graph._agent import Agent
from tenxgraph.core.graph._builder import StateGraph
from tenxgraph.core.graph._command import Command
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.graph._events import (
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    StreamEvent,
    UpdateEvent,
)
from tenxgraph.core.graph._hooks import RunHooks
from tenxgraph.core.graph._interrupt import GraphInterrupt, interrupt
from tenxgraph.core.graph._middleware import (
    AgentMiddleware,
    after_agent,
    after_model,
    before_agent,
    before_model,
)
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext
from tenxgraph.core.graph._prebuilt import create_agent, tools_condition
from tenxgraph.core.graph._run_control import RunControl
from tenxgraph.core.graph._snapshots import ThreadSnapshot
from tenxgraph.core.graph._thread_lease import MultitaskStrategy
from tenxgraph.core.graph._tool_node import ToolNode, ToolOutcome
from tenxgraph.core.graph._tools import Tool, tool

__all__ = [
    "Agent",
    "AgentMiddleware",
    "Command",
    "CompiledGraph",
    "ErrorEvent",
    "GraphInterrupt",
    "InterruptEvent",
    "MessageEvent",
    "MultitaskStrategy",
    "Node",
    "NodeOutput",
    "RunContext",
    "RunControl",
    "RunHooks",
    "RunResult",
    "StateGraph",
    "StreamEvent",
    "ThreadSnapshot",
    "Tool",
    "ToolNode",
    "ToolOutcome",
    "UpdateEvent",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
    "create_agent",
    "interrupt",
    "tool",
    "tools_condition",
]
