"""``create_agent``: the common tool-calling loop, model <-> tools until the model answers.

With middleware the loop becomes::

    START -> before_agent hooks -> before_model hooks -> agent -> after_model hooks
          -> tools (-> before_model hooks ...) | after_agent hooks -> END

An input that ends in an assistant message with tool calls (the model's
turn was already taken) goes from the before_agent hooks to the tools
first, then to the model, once.

``wrap_model_call`` runs inside the agent node, ``wrap_tool_call`` inside the
tools node; a middleware's ``tools`` join the agent's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, TypeVar

from tenxgraph.core.graph._agent import Agent
from tenxgraph.core.graph._builder import StateGraph
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.graph._middleware import (
    AgentMiddleware,
    HookNode,
    agent_tools,
    check_middleware,
    merge_state_schemas,
)
from tenxgraph.core.graph._tool_node import ToolNode
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.graph._toolsets import Toolset
from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.errors import GraphBuildError
from tenxgraph.storage.checkpointer.base import Checkpointer
from tenxgraph.utils.constants import END, START

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
    tools: Sequence[Callable[..., Any] | Tool | Toolset] = (),
    *,
    state: type[S] | S = AgentState,  # type: ignore[assignment]
    checkpointer: Checkpointer | None = None,
    context_manager: Any = None,
    middleware: Sequence[AgentMiddleware] = (),
    tool_timeout: float | None = None,
    recursion_limit: int = 25,
    **agent_options: Any,
) -> CompiledGraph[Any]:
    """Build and compile the agent loop, ending when the model stops calling tools.

    ``agent_options`` go to ``Agent`` (``system_prompt``, ``output_schema``,
    ``trim_context``, ``provider``...). ``middleware`` adds hooks around the
    loop (see ``tenxgraph.core.graph._middleware``), checked here: an unknown
    hook name, a sync ``wrap_*`` hook, two middleware of one name or two tools
    of one name raise ``GraphBuildError``. A forced ``tool_choice``
    (a tool name or ``required``) applies until that tool has answered in the
    current turn, then the model gets ``auto``, so the loop can end.
    """
    check_middleware(middleware)
    tools = agent_tools(tools, middleware)
    base = state if isinstance(state, type) else type(state)
    merged = merge_state_schemas(base, [*middleware, *tools])  # agent tools keep their messages
    seed: Any = merged if isinstance(state, type) else merged(**state.model_dump())
    graph: StateGraph[Any] = StateGraph(seed, context_manager=context_manager)
    chains = {hook: _hooks(middleware, hook) for hook in ("before_agent", "before_model")}
    chains["after_model"] = _hooks(list(reversed(middleware)), "after_model")
    chains["after_agent"] = _hooks(list(reversed(middleware)), "after_agent")
    model_entry = _first(chains["before_model"], AGENT_NODE)
    finish = _first(chains["after_agent"], END)
    targets = {"model": AGENT_NODE, "tools": TOOL_NODE, "end": finish}
    for hook, chain in chains.items():
        for name, middle in chain:
            allowed = tuple(middle.can_jump_to) if hook in ("before_model", "after_model") else ()
            if "tools" in allowed and not tools:
                raise GraphBuildError(f"{name}: can_jump_to 'tools' but the agent has no tools")
            jumps: dict[str, str] = {target: targets[target] for target in allowed}
            graph.add_node(name, HookNode(middle, hook, jumps), ends=list(jumps.values()))
    model_wrappers = [m.wrap_model_call for m in middleware if m.overrides("wrap_model_call")]
    tool_wrappers = [m.wrap_tool_call for m in middleware if m.overrides("wrap_tool_call")]
    graph.add_node(AGENT_NODE, Agent(model, tools=tools, wrappers=model_wrappers, **agent_options))
    # Also without tools: a model may call one anyway, and its call is answered with an
    # error result the model reads (as an unknown tool's is), never left unanswered.
    graph.add_node(TOOL_NODE, ToolNode(tools, timeout=tool_timeout, wrappers=tool_wrappers))
    graph.add_edge(TOOL_NODE, model_entry)
    opening = [(START, None), *chains["before_agent"]]
    for (name, _), (after, _) in pairwise(opening):
        graph.add_edge(name, after)

    def begin(current: AgentState) -> str:
        return TOOL_NODE if tools_condition(current) == TOOL_NODE else model_entry

    graph.add_conditional_edges(
        opening[-1][0], begin, {TOOL_NODE: TOOL_NODE, model_entry: model_entry}
    )
    path = [*chains["before_model"], (AGENT_NODE, None), *chains["after_model"]]
    for (name, _), (after, _) in pairwise(path):
        graph.add_edge(name, after)

    def after_loop(current: AgentState) -> str:
        return TOOL_NODE if tools_condition(current) == TOOL_NODE else finish

    graph.add_conditional_edges(path[-1][0], after_loop, {TOOL_NODE: TOOL_NODE, finish: finish})
    for (name, _), (after, _) in pairwise(chains["after_agent"]):
        graph.add_edge(name, after)
    return graph.compile(checkpointer, recursion_limit=recursion_limit)


def _hooks(middleware: Sequence[AgentMiddleware], hook: str) -> list[tuple[str, AgentMiddleware]]:
    return [(f"{m.name}.{hook}", m) for m in middleware if m.overrides(hook)]


def _first(chain: list[tuple[str, AgentMiddleware]], default: str) -> str:
    return chain[0][0] if chain else default
