"""Direct tool calls: application code runs a graph's tool by name (Strands: ``agent.tool.x()``).

A direct call runs through the same loop as any run, as a one-node graph on
the same thread: by default the call and its result are recorded in the
thread's history as a ``ToolCallBlock``/``ToolResultBlock`` pair and any
``ToolResult.state`` update is merged; with ``record=False`` nothing is saved.
Arguments go through the same checks as a model's: arguments that are not
a JSON object, or that fail the tool's schema, never run the tool and give
a failed result (recorded like any other).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph._node import Node, NodeOutput, RunContext
from tenxgraph.core.graph._tool_node import ToolOutcome, execute_tool
from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.graph._updates import Updates
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.core.state.tool_arguments import (
    INVALID_TOOL_ARGS_KEY,
    invalid_tool_args,
    tool_call,
)
from tenxgraph.errors import ToolError

if TYPE_CHECKING:
    from tenxgraph.core.graph._thread_ops import ThreadOperations

__all__ = ["DIRECT_NODE", "acall_tool"]

DIRECT_NODE = "direct_tool_call"


class _DirectCall(Node):
    """Runs one tool call and returns the call/result pair as messages."""

    def __init__(self, tool: Tool, args: object) -> None:
        self.tool = tool
        self.args = args
        self.result: ToolResultBlock | None = None

    async def run(self, state: AgentState, ctx: RunContext) -> AsyncIterator[NodeOutput]:
        refused: dict[str, Any] = {}
        call = tool_call(f"direct-{ctx.id_generator()}", self.tool.name, self.args, refused)
        metadata: dict[str, Any] = {"direct_tool_call": True}
        if refused:
            metadata[INVALID_TOOL_ARGS_KEY] = refused
        asked = Message(
            role="assistant", content=[call], message_id=ctx.id_generator(), metadata=metadata
        )
        refusal = invalid_tool_args(asked).get(call.id)
        if refusal is not None:
            outcome = ToolOutcome(refusal, is_error=True)
        else:
            outcome = await execute_tool({self.tool.name: self.tool}, call, state, ctx)
        outcome = outcome.storable(call.name)
        answered = outcome.message(call.id, ctx.id_generator())
        self.result = outcome.result_block(call.id)
        updates: list[tuple[str, Any]] = [(f"direct call of {call.name!r}", [asked, answered])]
        if outcome.update:
            updates.append((f"tool {call.name!r} ToolResult.state", outcome.update))
        yield NodeOutput(Updates(updates))


async def acall_tool(
    graph: ThreadOperations[Any],
    name: str,
    args: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    *,
    record: bool,
    invocation_state: dict[str, Any] | None,
) -> ToolResultBlock:
    """Run tool ``name`` of ``graph`` on the thread of ``config`` (``CompiledGraph.call_tool``)."""
    from tenxgraph.core.graph._builder import StateGraph

    tools = graph.tools()
    if name not in tools:
        raise ToolError(f"no tool {name!r} in this graph (tools: {', '.join(sorted(tools))})")
    node = _DirectCall(tools[name], args)
    builder = graph.builder
    if record or graph.checkpointer is None:
        seed: Any = builder.initial_state or builder.state_class
        checkpointer = graph.checkpointer if record else None
    else:
        seed = await graph.aget_state(config or {}) or builder.state_class
        checkpointer = None
    mini = StateGraph(seed, id_generator=builder.id_generator)
    mini.add_node(DIRECT_NODE, node)
    mini.set_entry_point(DIRECT_NODE)
    await mini.compile(checkpointer).ainvoke({}, config, invocation_state=invocation_state)
    assert node.result is not None
    return node.result
