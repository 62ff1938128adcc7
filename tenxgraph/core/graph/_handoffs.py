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
system prompt, tools and ``wrap_model_call`` middleware, and through its own
context manager when it has one (``_OwnWindow``: a trimmed view, never the
shared window); every message an agent writes carries its name
(``metadata["agent"]``). A handoff is an
ordinary tool call, so it has its result before the next agent speaks, and
a crash anywhere in it resumes like any tool call: the result and
``active_agent`` are saved together with the step.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import AsyncIterator, Sequence
from itertools import pairwise
from typing import Any

from pydantic import BaseModel

from tenxgraph.core.graph._agent import Agent
from tenxgraph.core.graph._builder import StateGraph
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.graph._events import MessageEvent
from tenxgraph.core.graph._middleware import (
    AgentMiddleware,
    HookNode,
    agent_tools,
    check_middleware,
    merge_state_schemas,
)
from tenxgraph.core.graph._node import Node, NodeOutput, RunContext, SaveProgress
from tenxgraph.core.graph._prebuilt import AGENT_NODE, TOOL_NODE
from tenxgraph.core.graph._tool_node import ToolNode
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.graph._toolsets import ToolIndex, index_tools
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
    middleware: Sequence[AgentMiddleware] = (),
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
    refused, since they belong to the member's own loop. ``middleware`` is
    the swarm's own, around every member (a ``HumanApproval``, say): its
    ``before_model``/``after_model`` hooks run around each member's model
    node, ``before_agent``/``after_agent`` once per run, its ``wrap_*`` hooks
    outside each member's own; jumps (``can_jump_to``) are refused.
    ``compile_options`` go to ``StateGraph.compile`` (``lease_seconds=``...).
    """
    members = _members(agents)
    names = list(members)
    first = default if default is not None else names[0]
    if first not in members:
        raise GraphBuildError(f"create_swarm: default {first!r} is not one of {names}")
    check_middleware(middleware)
    for middle in middleware:
        if middle.can_jump_to:
            raise GraphBuildError(f"swarm middleware {middle.name!r}: can_jump_to is not supported")
    member_tools = [tool for _, tools, _ in members.values() for tool in tools.tools.values()]
    merged = merge_state_schemas(state, [_Holder(ActiveAgent), *middleware, *member_tools])
    graph: StateGraph[Any] = StateGraph(merged, context_manager=context_manager)
    entries = {name: _entry(middleware, name) for name in names}
    finish = _hook_chain(graph, middleware, "after_agent", "", END)
    route = _active(first, names, entries)
    for name, (agent, tools, window) in members.items():
        others = [n for n in names if n != name]
        _add_member(graph, name, agent, tools, window, others, middleware)
        after = _hook_chain(graph, middleware, "after_model", name, None)
        graph.add_conditional_edges(
            after, _after_model(name, finish), {f"{name}.tools": f"{name}.tools", finish: finish}
        )
        graph.add_conditional_edges(f"{name}.tools", route, list(entries.values()))
    opening = _hook_chain(graph, middleware, "before_agent", "", None, start=True)
    graph.add_conditional_edges(opening, route, list(entries.values()))
    return graph.compile(checkpointer, recursion_limit=recursion_limit, **compile_options)


def _add_member(
    graph: StateGraph[Any],
    name: str,
    agent: Agent,
    tools: ToolNode,
    window: Any,
    others: list[str],
    middleware: Sequence[AgentMiddleware],
) -> None:
    """The member's model and tools nodes, with its handoffs and the swarm's middleware."""
    handoffs = {h.name: h for h in (handoff_tool(other) for other in others)}
    extra = ToolIndex({**index_tools(agent_tools((), middleware)).static, **handoffs})
    taken = sorted(set(agent.tools) & set(extra))
    if taken:
        raise GraphBuildError(f"agent {name!r} already has a tool named {taken[0]!r}")
    model_node = copy.copy(agent)
    model_node.tools = agent.tools.union(extra)  # keeps the agent's toolsets (MCP servers)
    model_node.wrappers = (*_wraps(middleware, "wrap_model_call"), *agent.wrappers)
    tool_node = copy.copy(tools)
    tool_node.tools = tools.tools.union(extra)
    tool_node.wrappers = (*_wraps(middleware, "wrap_tool_call"), *tools.wrappers)
    before = _chain(middleware, "before_model", name)
    for hook_name, middle in before:
        graph.add_node(hook_name, HookNode(middle, "before_model", {}))
    own = window is not None and agent.trim_context
    graph.add_node(name, _OwnWindow(model_node, window) if own else model_node)
    graph.add_node(f"{name}.tools", tool_node)
    for (a, _), (b, _) in pairwise([*before, (name, None)]):
        graph.add_edge(a, b)


def _chain(
    middleware: Sequence[AgentMiddleware], hook: str, prefix: str
) -> list[tuple[str, AgentMiddleware]]:
    """The node names of ``hook`` for member ``prefix`` (or the swarm's, for ``""``)."""
    ordered = middleware if hook.startswith("before") else list(reversed(middleware))
    head = f"{prefix}." if prefix else ""
    return [(f"{head}{m.name}.{hook}", m) for m in ordered if m.overrides(hook)]


def _hook_chain(
    graph: StateGraph[Any],
    middleware: Sequence[AgentMiddleware],
    hook: str,
    prefix: str,
    then: str | None,
    *,
    start: bool = False,
) -> str:
    """Add ``hook``'s nodes in a line (after START with ``start``, then to ``then``).

    Returns the first node of the line when ``then`` is given (where the line
    is entered), else its last (where the caller routes from).
    """
    chain = _chain(middleware, hook, prefix)
    for hook_name, middle in chain:
        graph.add_node(hook_name, HookNode(middle, hook, {}))
    line = [n for n, _ in chain]
    anchor = prefix if hook == "after_model" else None
    path = [*([START] if start else []), *([anchor] if anchor else []), *line]
    path += [then] if then is not None and line else []
    for a, b in pairwise(path):
        graph.add_edge(a, b)
    if then is not None:
        return line[0] if line else then
    return path[-1] if path else START


def _entry(middleware: Sequence[AgentMiddleware], name: str) -> str:
    """Where member ``name``'s turn is entered: its first before_model hook, or its model."""
    chain = _chain(middleware, "before_model", name)
    return chain[0][0] if chain else name


def _wraps(middleware: Sequence[AgentMiddleware], hook: str) -> list[Any]:
    return [getattr(m, hook) for m in middleware if m.overrides(hook)]


class _OwnWindow(Node):
    """A member's model node that reads the shared history through its own context manager.

    The member's manager (``create_agent(context_manager=..., trim_context=True)``)
    trims a view of the state, a copy whose window is its own; the shared
    window and the stored log stay the swarm's, and the answer joins them.
    """

    def __init__(self, agent: Agent, manager: Any) -> None:
        self.agent = agent
        self.manager = manager

    def bind(self, graph: StateGraph[Any], name: str) -> _OwnWindow:
        with warnings.catch_warnings():  # the swarm may have no manager: this node has its own
            warnings.simplefilter("ignore", UserWarning)
            return _OwnWindow(self.agent.bind(graph, name), self.manager)

    async def run(
        self, state: AgentState, ctx: RunContext
    ) -> AsyncIterator[MessageEvent | SaveProgress | NodeOutput]:
        """Run the agent over a view of ``state`` trimmed by the member's manager."""
        view = state.model_copy()
        view.set_context(list(state.context))
        async for item in self.agent.run(
            view, dataclasses.replace(ctx, context_manager=self.manager)
        ):
            yield item


class _Holder:
    """Something with a ``state_schema``, for ``merge_state_schemas``."""

    def __init__(self, schema: type[BaseModel]) -> None:
        self.state_schema = schema


def _members(agents: Sequence[CompiledGraph[Any]]) -> dict[str, tuple[Agent, ToolNode, Any]]:
    """Each member's name, model node, tools node and own context manager, checked."""
    members: dict[str, tuple[Agent, ToolNode, Any]] = {}
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
        members[model.name] = (model, tools, agent.context_manager)
    return members


def _after_model(name: str, finish: str) -> Any:
    def route(state: AgentState) -> str:
        return f"{name}.tools" if unanswered_calls(state.context) else finish

    return route


def _active(default: str, names: Sequence[str], entries: dict[str, str]) -> Any:
    """Route to where the active agent's turn is entered (its first before_model hook)."""
    known = frozenset(names)

    def route(state: Any) -> str:
        active = getattr(state, "active_agent", None)
        return entries[active if active in known else default]

    return route
