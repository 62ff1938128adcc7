"""The graph runtime: builder, run loop, Agent and ToolNode."""

from tenxgraph.core.graph.agent import Agent
from tenxgraph.core.graph.builder import StateGraph
from tenxgraph.core.graph.command import Command
from tenxgraph.core.graph.compiled import CompiledGraph
from tenxgraph.core.graph.events import (
    ErrorEvent,
    InterruptEvent,
    MessageEvent,
    RunResult,
    StreamEvent,
    UpdateEvent,
)
from tenxgraph.core.graph.hooks import RunHooks
from tenxgraph.core.graph.interrupt import GraphInterrupt, interrupt
from tenxgraph.core.graph.middleware import (
    AgentMiddleware,
    after_agent,
    after_model,
    before_agent,
    before_model,
)
from tenxgraph.core.graph.node import Node, NodeOutput, RunContext
from tenxgraph.core.graph.prebuilt import create_agent, tools_condition
from tenxgraph.core.graph.run_control import RunControl
from tenxgraph.core.graph.snapshots import ThreadSnapshot
from tenxgraph.core.graph.thread_lease import MultitaskStrategy
from tenxgraph.core.graph.tool_node import ToolNode, ToolOutcome
from tenxgraph.core.graph.tools import Tool, tool

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
