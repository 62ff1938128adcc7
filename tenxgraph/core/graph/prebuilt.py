"""``create_agent``: the common tool-calling loop, model <-> tools until the model answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tenxgraph.core.graph.agent import Agent
from tenxgraph.core.graph.builder import StateGraph
from tenxgraph.core.graph.compiled import CompiledGraph
from tenxgraph.core.graph.tool_node import ToolNode
from tenxgraph.core.graph.tools import Tool
from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.storage.checkpointer.base import Checkpointer
from tenxgraph.utils.constants import END

__all__ = ["AGENT_NODE", "TOOL_NODE", "create_agent", "tools_condition"]

S = TypeVar("S", bound=AgentState)

AGENT_NODE = "agent"
TOOL_NODE = "tools"


def tools_condition(state: AgentState) -> str:
    """Route to the tools when the last message asks for tool calls, else end the run."""
    last = state.context[-1] if state.context else None
    if last is not None and last.role == "assistant" and last.tool_calls():
        return TOOL_NODE
    return END


def create_agent(
    model: str | ChatModel,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    *,
    state: type[S] | S = AgentState,  # type: ignore[assignment]
    checkpointer: Checkpointer | None = None,
    context_manager: Any = None,
    tool_timeout: float | None = None,
    recursion_limit: int = 25,
    **agent_options: Any,
) -> CompiledGraph[S]:
    """Build and compile ``agent -> tools -> agent ...`` ending when the model stops calling tools.

    ``agent_options`` go to ``Agent`` (``system_prompt``, ``output_schema``,
    ``trim_context``, ``provider``...).
    """
    graph: StateGraph[S] = StateGraph(state, context_manager=context_manager)
    graph.add_node(AGENT_NODE, Agent(model, tools=tools, **agent_options))
    graph.set_entry_point(AGENT_NODE)
    if tools:
        graph.add_node(TOOL_NODE, ToolNode(tools, timeout=tool_timeout))
        graph.add_conditional_edges(AGENT_NODE, tools_condition, {TOOL_NODE: TOOL_NODE, END: END})
        graph.add_edge(TOOL_NODE, AGENT_NODE)
    return graph.compile(checkpointer, recursion_limit=recursion_limit)
