"""Agents as tools: a whole agent loop behind one tool call, and the supervisor built on it.

``agent_tool(agent, ...)`` turns a compiled agent (``create_agent(...,
name=...)``) into a ``Tool`` the caller's model calls with one argument,
``request``. Each call runs the inner agent's own loop (``ainvoke``) on its
own context window: fresh on every call, or, with ``keep_context=True``, the
window of its earlier calls in this thread. The tool's result is the inner
agent's final answer: its text, its structured output (``output_schema``) as
JSON data, or with ``output="full_history"`` a transcript of everything it
did (LangGraph's supervisor calls these ``last_message`` and
``full_history``).

The inner agent's messages are kept in the caller's thread, out of the
caller's window: in the state field ``agent_messages`` (``AgentMessages``,
which ``create_agent`` adds when one of its tools is an agent tool), each
message marked with ``metadata["agent"]`` (who wrote it, when its agent has a
name), ``"agent_tool"`` and ``"agent_call"`` (the tool and the call id that
ran it). The field is saved with the thread's state row, so it is bounded by
what the agent tools say; ``keep_messages=False`` keeps nothing.

When the caller's stream yields subgraphs' events (``stream(...,
subgraphs=True)``), the inner agent's events (tokens, messages, updates,
what its tools write) are forwarded into it while the call runs, each a
``SubgraphEvent`` under ``(<tools node>, "<tool name>:<call id>")``: the
call, not the agent, names it, so two calls running at once stay apart.

``create_supervisor`` is the pattern, not a runtime: an agent whose tools are
its workers as agent tools.
"""

from __future__ import annotations

import json
import operator
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, Field

from tenxgraph.core.graph._agent import AGENT_KEY, Agent
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.graph._events import (
    CustomEvent,
    MessageEvent,
    RunResult,
    StreamEvent,
    SubgraphEvent,
    UpdateEvent,
)
from tenxgraph.core.graph._interrupt import _scope
from tenxgraph.core.graph._subgraph import Fresh, parent_scope, run_nested
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.tool_result import ToolResult
from tenxgraph.errors import GraphBuildError, ToolError

__all__ = [
    "AGENT_CALL_KEY",
    "AGENT_TOOL_KEY",
    "AgentMessages",
    "AgentTool",
    "OutputMode",
    "agent_name",
    "agent_tool",
    "create_supervisor",
]

AGENT_TOOL_KEY = "agent_tool"
"""``Message.metadata`` key of an inner agent's message: the agent tool that ran it."""
AGENT_CALL_KEY = "agent_call"
"""``Message.metadata`` key of an inner agent's message: the id of the call that ran it."""

OutputMode = Literal["last_message", "full_history"]


class AgentMessages(BaseModel):
    """The state field where agent tools keep their agents' messages, out of the window."""

    agent_messages: Annotated[list[Message], operator.add] = Field(default_factory=list)
    """Every message the inner agents of agent tools read or wrote, oldest first."""


def agent_name(agent: CompiledGraph[Any]) -> str | None:
    """The name of ``agent``'s model node (``create_agent(..., name=...)``), if it has one."""
    node = agent.nodes.get("agent")
    return node.name if isinstance(node, Agent) else None


class AgentTool(Tool):
    """A tool that runs another agent's loop (see ``agent_tool``)."""

    state_schema = AgentMessages
    """The state field the inner messages are kept in; ``create_agent`` adds it."""

    def __init__(
        self,
        agent: CompiledGraph[Any],
        *,
        name: str,
        description: str,
        keep_context: bool,
        keep_messages: bool,
        output: OutputMode,
    ) -> None:
        self.agent = agent
        self.keep_context = keep_context
        self.keep_messages = keep_messages or keep_context
        self.output = output

        async def run(  # noqa: D417 - the runtime fills in all but request
            request: str,
            state: AgentState,
            tool_call_id: str,
            config: dict[str, Any],
            invocation_state: dict[str, Any],
        ) -> Any:
            """Ask the agent.

            Args:
                request: What the agent should do, with everything it needs to know.
            """
            return await self._run(request, state, tool_call_id, config, invocation_state)

        super().__init__(run, name=name, description=description)

    async def _run(
        self,
        request: str,
        state: AgentState,
        call_id: str,
        config: dict[str, Any],
        invocation_state: dict[str, Any],
    ) -> Any:
        name = self.name
        keeps = "agent_messages" in type(state).model_fields
        if self.keep_context and not keeps:
            raise ToolError(
                f"agent tool {name!r} keeps its context in the state field agent_messages, "
                "which this graph's state lacks: add AgentMessages to the state class"
            )
        kept: list[Message] = getattr(state, "agent_messages", None) or []
        earlier = [m for m in kept if m.metadata.get(AGENT_TOOL_KEY) == name]
        asked = Message.text_message(request)
        inner_config = {"user_id": config["user_id"]} if config.get("user_id") else {}
        input = {"messages": [*earlier, asked] if self.keep_context else [asked]}
        scope = _scope.get()
        forward = None if scope is None else scope.forward
        if forward is None:  # nothing streams the caller's subgraphs: keep only the result
            result = await self.agent.ainvoke(
                input, inner_config, invocation_state=invocation_state
            )
        else:
            node = (scope.namespace.rsplit("|", 1)[-1],) if scope and scope.namespace else ()
            namespace = (*node, f"{name}:{call_id}")
            result = await self._streamed(input, inner_config, invocation_state, namespace, forward)
        if result.get("interrupt") is not None:
            raise ToolError(
                f"agent tool {name!r}: its agent paused for a person, which a tool cannot"
            )
        produced: list[Message] = result["messages"]
        if not produced:
            raise ToolError(f"agent tool {name!r}: its agent gave no answer")
        answer = self._answer(produced)
        if not self.keep_messages or not keeps:
            return answer
        marks = {AGENT_TOOL_KEY: name, AGENT_CALL_KEY: call_id}
        stored = [
            m.model_copy(update={"metadata": {**m.metadata, **marks}}) for m in [asked, *produced]
        ]
        return ToolResult(answer, {"agent_messages": stored})

    async def _streamed(
        self,
        input: dict[str, Any],
        config: dict[str, Any],
        invocation_state: dict[str, Any],
        namespace: tuple[str, ...],
        forward: Callable[[SubgraphEvent], None],
    ) -> dict[str, Any]:
        """Run the agent as ``ainvoke`` does, forwarding its events under ``namespace``."""
        parent = parent_scope(self.agent)
        if parent is not None:  # in the node's own scope: a subgraph of the caller's run
            fresh = Fresh(self.agent._fresh_state, input)
            nested = run_nested(self.agent, fresh, parent, None, config, invocation_state)
            events = cast(AsyncGenerator[StreamEvent, None], nested)  # an async generator
        else:
            events = self.agent.astream(
                input, config, invocation_state=invocation_state, subgraphs=True
            )
        result: RunResult | None = None
        async with aclosing(events):
            async for event in events:
                if isinstance(event, RunResult):
                    result = event
                elif isinstance(event, SubgraphEvent):
                    # run_nested names the node first; astream's are the agent's own
                    inner = event.namespace[1:] if parent is not None else event.namespace
                    forward(SubgraphEvent(namespace + inner, event.event, event.state))
                elif isinstance(event, MessageEvent | UpdateEvent | CustomEvent):
                    forward(SubgraphEvent(namespace, event))
        assert result is not None  # a run that did not raise ends with its result
        return result.as_dict()

    def _answer(self, produced: list[Message]) -> Any:
        last = produced[-1]
        if self.output == "full_history":
            return "\n".join(_transcript_line(m) for m in produced)
        parsed = last.parsed_content
        if isinstance(parsed, BaseModel):
            return parsed.model_dump(mode="json")
        if parsed is not None:
            return parsed
        return last.text()


def agent_tool(
    agent: CompiledGraph[Any],
    name: str | None = None,
    description: str | None = None,
    *,
    keep_context: bool = False,
    keep_messages: bool = True,
    output: OutputMode = "last_message",
) -> AgentTool:
    """``agent`` as a tool another agent's model calls (``request``: what to do).

    ``name`` defaults to the agent's name; ``description`` says what the agent
    is for (the caller's model reads it). ``keep_context=True`` gives the agent
    its earlier calls' messages of this thread (kept in ``agent_messages``);
    ``output`` is ``"last_message"`` (its answer) or ``"full_history"`` (a
    transcript of its messages). The agent must have no checkpointer: it runs
    inside the caller's thread, which keeps what it says.
    """
    if not isinstance(agent, CompiledGraph):
        raise GraphBuildError(
            f"agent_tool needs a compiled agent (create_agent), got {type(agent).__name__}"
        )
    if agent.checkpointer is not None:
        raise GraphBuildError(
            "agent_tool: compile the agent without a checkpointer; it runs inside the "
            "caller's thread, which keeps its messages"
        )
    if output not in ("last_message", "full_history"):
        raise GraphBuildError(f"agent_tool output must be last_message or full_history: {output!r}")
    tool_name = name or agent_name(agent)
    if tool_name is None:
        raise GraphBuildError("agent_tool needs a name: create_agent(..., name=...) or name=")
    return AgentTool(
        agent,
        name=tool_name,
        description=description or f"Ask the {tool_name} agent to do something.",
        keep_context=keep_context,
        keep_messages=keep_messages,
        output=output,
    )


def create_supervisor(
    model: Any,
    workers: Sequence[CompiledGraph[Any] | AgentTool],
    *,
    output: OutputMode = "last_message",
    name: str = "supervisor",
    **create_agent_options: Any,
) -> CompiledGraph[Any]:
    """An agent that routes work to named worker agents (as agent tools) and composes the answer.

    Each worker is a compiled, named agent (or an ``agent_tool`` you made,
    with its own description); ``output`` is what a worker passes back. The
    other options go to ``create_agent`` (``system_prompt``, ``checkpointer``,
    ``tools``...).
    """
    from tenxgraph.core.graph._prebuilt import create_agent

    tools: list[Any] = list(create_agent_options.pop("tools", ()))
    for worker in workers:
        tools.append(worker if isinstance(worker, AgentTool) else agent_tool(worker, output=output))
    return create_agent(model, tools, name=name, **create_agent_options)


def _transcript_line(message: Message) -> str:
    who = message.metadata.get(AGENT_KEY) or message.role
    parts = [message.text()] if message.text() else []
    parts += [f"calls {c.name}({_json(c.args)})" for c in message.tool_calls()]
    return f"[{who}] {' '.join(parts)}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
