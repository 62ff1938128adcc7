"""Handoffs: agents that pass the conversation to one another (``create_swarm``).

Each member is a named agent from ``create_agent(..., name=...)``; its model
node and tools node join one graph, named after the agent (``triage``,
``triage.tools``). Every member gets one handoff tool per other member,
``transfer_to_<name>``, which answers the call ("transferred to <name>") and
sets the state field ``active_agent``. After the tools, the run goes to the
active agent; a turn starts at the active agent (the first member until a
handoff), so the next user message goes to whoever took over, in this run
or a later one.

All members read one shared history (``state.context``): each with its own
system prompt, tools and ``wrap_model_call`` middleware; every message an
agent writes carries its name (``metadata["agent"]``). A handoff is an
ordinary tool call, so it has its result before the next agent speaks, and
a crash anywhere in it resumes like any tool call: the result and
``active_agent`` are saved together with the step.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from tenxgraph.core.graph._agent import Agent
from tenxgraph.core.graph._builder import StateGraph
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.graph._middleware import merge_state_schemas
from tenxgraph.core.graph._prebuilt import AGENT_NODE, TOOL_NODE
from tenxgraph.core.graph._tool_node import ToolNode
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.pairing import last_tool_request, unanswered_calls
from tenxgraph.core.state.tool_result import ToolResult
from tenxgraph.errors import GraphBuildError, ToolError
from tenxgraph.storage.checkpointer.base import Checkpointer
from tenxgraph.utils.constants import END, START

__all__ = ["HANDOFF_PREFIX", "ActiveAgent", "create_swarm", "handoff_tool"]

HANDOFF_PREFIX = "transfer_to_"
"""Handoff tools are named ``transfer_to_<agent name>``."""


class ActiveAgent(BaseModel):
    """The state field of a swarm: who answers next."""

    active_agent: str | None = None
    """The name of the agent the conversation is with; None before the first turn."""


def handoff_tool(target: str, description: str | None = None) -> Tool:
    """The tool ``transfer_to_<target>``: answers its call and makes ``target`` the active agent.

    Only the first handoff of one model answer counts: a second one gets a
    failed result saying so, so two agents never take over at once.
    """
    name = f"{HANDOFF_PREFIX}{target}"

    def transfer(state: AgentState, tool_call_id: str) -> ToolResult:
        asked = last_tool_request(state.context)
        calls = asked.tool_calls() if asked is not None else []
        first = next((c for c in calls if c.name.startswith(HANDOFF_PREFIX)), None)
        if first is not None and first.id != tool_call_id:
            raise ToolError(f"{first.name} came first in this answer; only one agent takes over")
        return ToolResult(f"transferred to {target}", {"active_agent": target})

    return Tool(
        transfer,
        name=name,
        description=description or f"Hand the conversation to the {target} agent.",
    )


def create_swarm(
    agents: Sequence[CompiledGraph[Any]],
    *,
    default: str | None = None,
    state: type[AgentState] = AgentState,
    checkpointer: Checkpointer | None = None,
    context_manager: Any = None,
    recursion_limit: int = 25,
    **compile_options: Any,
) -> CompiledGraph[Any]:
    """One graph of named agents that hand the conversation to each other.

    ``agents`` are ``create_agent`` graphs with names, compiled without a
    checkpointer (the swarm's keeps the thread); ``default`` answers first
    (the first agent unless named). Members may use ``wrap_model_call`` and
    ``wrap_tool_call`` middleware; hooks that run as nodes (before/after) are
    refused, since they belong to the member's own loop. ``compile_options``
    go to ``StateGraph.compile`` (``lease_seconds=``, ``hooks=``...).
    """
    members = _members(agents)
    names = list(members)
    first = default if default is not None else names[0]
    if first not in members:
        raise GraphBuildError(f"create_swarm: default {first!r} is not one of {names}")
    merged = merge_state_schemas(state, [_Holder(ActiveAgent)])
    graph: StateGraph[Any] = StateGraph(merged, context_manager=context_manager)
    for name, (agent, tools) in members.items():
        handoffs = [handoff_tool(other) for other in names if other != name]
        taken = set(agent.tools) & {h.name for h in handoffs}
        if taken:
            raise GraphBuildError(f"agent {name!r} already has a tool named {sorted(taken)[0]!r}")
        model_node = copy.copy(agent)
        model_node.tools = {**agent.tools, **{h.name: h for h in handoffs}}
        tool_node = copy.copy(tools)
        tool_node.tools = {**tools.tools, **{h.name: h for h in handoffs}}
        graph.add_node(name, model_node)
        graph.add_node(f"{name}.tools", tool_node)
        graph.add_conditional_edges(
            name, _after_model(name), {f"{name}.tools": f"{name}.tools", END: END}
        )
        graph.add_conditional_edges(f"{name}.tools", _active(first, names), names)
    graph.add_conditional_edges(START, _active(first, names), names)
    return graph.compile(checkpointer, recursion_limit=recursion_limit, **compile_options)


class _Holder:
    """Something with a ``state_schema``, for ``merge_state_schemas``."""

    def __init__(self, schema: type[BaseModel]) -> None:
        self.state_schema = schema


def _members(agents: Sequence[CompiledGraph[Any]]) -> dict[str, tuple[Agent, ToolNode]]:
    """Each member's name, model node and tools node, checked."""
    members: dict[str, tuple[Agent, ToolNode]] = {}
    if not agents:
        raise GraphBuildError("create_swarm needs at least one agent")
    for agent in agents:
        if not isinstance(agent, CompiledGraph):
            raise GraphBuildError(f"create_swarm takes create_agent graphs, got {agent!r}")
        model, tools = agent.nodes.get(AGENT_NODE), agent.nodes.get(TOOL_NODE)
        if not isinstance(model, Agent) or not isinstance(tools, ToolNode):
            raise GraphBuildError(
                "create_swarm takes create_agent graphs (an agent and tools node)"
            )
        if model.name is None:
            raise GraphBuildError("each agent of a swarm needs a name: create_agent(..., name=...)")
        if model.name in members:
            raise GraphBuildError(f"two agents of the swarm are named {model.name!r}")
        hooks = sorted(set(agent.nodes) - {AGENT_NODE, TOOL_NODE})
        if hooks:
            raise GraphBuildError(
                f"agent {model.name!r} has middleware hooks that run as nodes "
                f"({', '.join(hooks)}); a swarm member may only use wrap_model_call and "
                "wrap_tool_call"
            )
        if agent.checkpointer is not None:
            raise GraphBuildError(
                f"agent {model.name!r}: compile swarm members without a checkpointer; "
                "give it to create_swarm"
            )
        members[model.name] = (model, tools)
    return members


def _after_model(name: str) -> Any:
    def route(state: AgentState) -> str:
        return f"{name}.tools" if unanswered_calls(state.context) else END

    return route


def _active(default: str, names: Sequence[str]) -> Any:
    known = frozenset(names)

    def route(state: Any) -> str:
        active = getattr(state, "active_agent", None)
        return active if active in known else default

    return route
