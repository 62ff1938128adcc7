"""The graph runtime: builder, run loop, Agent and ToolNode."""

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
from tenxgraph.core.graph.interrupt import GraphInterrupt, interrupt
from tenxgraph.core.graph.node import Node, NodeOutput, RunContext

__all__ = [
    "Command",
    "CompiledGraph",
    "ErrorEvent",
    "GraphInterrupt",
    "InterruptEvent",
    "MessageEvent",
    "Node",
    "NodeOutput",
    "RunContext",
    "RunResult",
    "StateGraph",
    "StreamEvent",
    "UpdateEvent",
    "interrupt",
]
