"""Direct tool calls: application code runs a graph's tool by name (Strands: ``agent.tool.x()``).

A recorded call (the default) is a turn of its own on the thread. It holds
the thread's lease as a run does, so it never lands inside another run's
turn, and it moves the thread on as new messages would: a paused or failed
turn refuses it (resume, retry or roll that turn back first), and calls a
stopped or dead run left without a result are answered as interrupted. It
adds the optional note (a user message), the call and its result, merges
a ``ToolResult.state`` update, lets the graph's context manager bound the
context as the end of a run does, and saves all of it in one
compare-and-swap write, or nothing. ``record=False`` reads the thread as it
was last saved, runs the tool and writes nothing.

The tool gets an idempotency key of its own, new for every direct call:
nothing re-runs a direct call (one the process died in is not recorded),
and an application that repeats a call repeats it on purpose.

Arguments go through the same checks as a model's: arguments that are not
a JSON object, or that fail the tool's schema, never run the tool and give
a failed result (recorded like any other). Two things are refused with an
error and leave the thread untouched: a recorded call from code that a run
(or a direct call) of the same thread is running, which would split that
turn, and a tool that calls ``interrupt()``, for a direct call has no run
to pause and resume.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph import _history as history
from tenxgraph.core.graph._entry import check_at_rest
from tenxgraph.core.graph._interrupt import GraphInterrupt, InterruptScope, running_thread
from tenxgraph.core.graph._node import RunContext
from tenxgraph.core.graph._remote_tools import RemoteTool
from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.graph._tool_node import ToolOutcome, close_interrupted_calls, execute_tool
from tenxgraph.core.graph._toolsets import ToolIndex
from tenxgraph.core.graph._updates import Updates
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey, checkpoint_of, run_config
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.tool_arguments import (
    DIRECT_CALL_KEY,
    INVALID_TOOL_ARGS_KEY,
    invalid_tool_args,
    tool_call,
)
from tenxgraph.errors import ConfigError, StateError, ToolError, UsageError
from tenxgraph.runs import take_thread
from tenxgraph.storage.checkpointer.base import Checkpointer

if TYPE_CHECKING:
    from tenxgraph.core.graph._thread_ops import ThreadOperations
    from tenxgraph.core.graph._tools import Tool

__all__ = ["DIRECT_CALL_KEY", "DIRECT_NODE", "acall_tool"]

DIRECT_NODE = "direct_tool_call"
"""The node name a recorded direct call's checkpoint carries."""


@dataclass(slots=True)
class _Ran:
    """A direct call that ran: the assistant message asking for it, and its outcome."""

    asked: Message
    call: ToolCallBlock
    outcome: ToolOutcome

    def records(self, graph: ThreadOperations[Any]) -> list[tuple[str, Any]]:
        """The updates that record the call: its pair, then its ``ToolResult.state``."""
        answered = self.outcome.message(self.call.id, graph.id_generator())
        answered.metadata[DIRECT_CALL_KEY] = True
        items: list[tuple[str, Any]] = [
            (f"direct call of {self.call.name!r}", [self.asked, answered])
        ]
        if self.outcome.update:
            items.append((f"tool {self.call.name!r} ToolResult.state", self.outcome.update))
        return items


async def acall_tool(
    graph: ThreadOperations[Any],
    name: str,
    args: object,
    config: Mapping[str, Any] | None,
    *,
    record: bool,
    invocation_state: dict[str, Any] | None,
    note: str | None = None,
) -> ToolResultBlock:
    """Run tool ``name`` of ``graph`` on the thread of ``config`` (``CompiledGraph.call_tool``)."""
    toolsets = graph.toolsets()
    if toolsets:  # an MCP server's tools: connected and listed before the lookup
        await ToolIndex({}, toolsets).aprepare()
    tools = graph.tools()
    if name not in tools:
        raise ToolError(f"no tool {name!r} in this graph (tools: {', '.join(sorted(tools))})")
    tool = tools[name]
    if isinstance(tool, RemoteTool):
        raise ToolError(
            f"tool {name!r} is a remote tool: it runs in the client, so it cannot be called "
            "directly; let a model call it in a run"
        )
    noted = _note_message(graph, note, record)
    config = run_config(config)
    if graph.checkpointer is None:  # no thread to read or record into: the call just runs
        ran = await _run(graph, tool, args, graph._fresh_state(), config, invocation_state, None)
        return ran.outcome.result_block(ran.call.id)
    key = history.thread_key(config)
    if not record:
        state = await graph.aget_state(config) or graph._fresh_state()
        ran = await _run(graph, tool, args, state, config, invocation_state, key)
        return ran.outcome.result_block(ran.call.id)
    if checkpoint_of(config) is not None:
        raise StateError(
            f"a recorded direct call of {name!r} is added to the thread's current state; to "
            "branch from an older checkpoint, run from it (invoke with checkpoint_id) first, "
            "or pass record=False to run the tool on that checkpoint's state unrecorded"
        )
    if running_thread() == key:
        raise UsageError(
            f"cannot record a direct call of {name!r} on thread {key.thread_id!r} from code that "
            "a run (or a direct call) of that thread is running: the thread is held until that "
            "turn ends, and a call recorded now would split it; pass record=False to run the "
            "tool without recording it"
        )
    return await _recorded(
        graph, graph.checkpointer, tool, args, config, key, invocation_state, noted
    )


def _note_message(graph: ThreadOperations[Any], note: str | None, record: bool) -> Message | None:
    """The user message that records ``note`` with the call; checked before the tool runs."""
    if note is None:
        return None
    if not isinstance(note, str) or not note.strip():
        raise ConfigError(f"note must be a non-empty str, got {note!r}")
    if not record:
        raise ConfigError("note is recorded with the call, but record=False records nothing")
    message = Message.text_message(note, message_id=graph.id_generator())
    message.metadata[DIRECT_CALL_KEY] = True
    return message


async def _run(
    graph: ThreadOperations[Any],
    tool: Tool,
    args: object,
    state: AgentState,
    config: dict[str, Any],
    invocation_state: dict[str, Any] | None,
    thread: ThreadKey | None,
) -> _Ran:
    """Check the arguments, run the tool over ``state``, make its outcome storable."""
    new_id = graph.id_generator
    refused: dict[str, Any] = {}
    call = tool_call(f"direct-{new_id()}", tool.name, args, refused)
    metadata: dict[str, Any] = {DIRECT_CALL_KEY: True}
    if refused:
        metadata[INVALID_TOOL_ARGS_KEY] = refused
    asked = Message(role="assistant", content=[call], message_id=new_id(), metadata=metadata)
    refusal = invalid_tool_args(asked).get(call.id)
    if refusal is not None:
        return _Ran(asked, call, ToolOutcome(refusal, is_error=True).storable(call.name))
    ctx = RunContext(
        node=DIRECT_NODE,
        config=config,
        invocation_state=invocation_state if invocation_state is not None else {},
        interrupt_scope=InterruptScope(thread=thread),
        id_generator=new_id,
        context_manager=graph.context_manager,
        workers=graph.workers,
        run_id=f"direct-{uuid.uuid4().hex}",
    )
    try:
        key = ctx.tool_call_key(asked.message_id, call.id)  # the run id is new: a key of its own
        outcome = await execute_tool({tool.name: tool}, call, state, ctx, key=key)
    except GraphInterrupt:
        raise ToolError(
            f"tool {tool.name!r} called interrupt(), which a direct call cannot pause for: there "
            "is no run to resume. Nothing was recorded; let a model call the tool in a run"
        ) from None
    return _Ran(asked, call, outcome.storable(call.name))


async def _recorded(
    graph: ThreadOperations[Any],
    checkpointer: Checkpointer,
    tool: Tool,
    args: object,
    config: dict[str, Any],
    key: ThreadKey,
    invocation_state: dict[str, Any] | None,
    noted: Message | None,
) -> ToolResultBlock:
    """Run the call as a turn of its own on the thread, holding its lease, and save it whole."""
    owner = f"direct-{uuid.uuid4().hex}"
    lease = await take_thread(checkpointer, key, owner, graph.leases.for_run(config))
    try:
        lease.start_heartbeat()  # a long tool must not let the lease expire under it
        session, state = await graph.warm.open(checkpointer, key, graph.state_class, lease.stamp)
        session.lease = lease.owner
        if state is None:
            state = graph._fresh_state()
        check_at_rest(state.execution_meta, key.thread_id, "calling a tool directly")
        ran = await _run(graph, tool, args, state, config, invocation_state, key)
        state, added = await _record(graph, session, state, ran, noted)
        if graph.context_manager is not None:  # as at the end of a run
            state = await graph.context_manager.atrim_context(state)
        _end_turn(state, session.version)
        session.record(added)
        await lease.stop_heartbeat()
        await session.save(state, DIRECT_NODE, state.execution_meta.step, release=True)
        lease.released = True
        graph.warm.keep(session)
        return ran.outcome.result_block(ran.call.id)
    finally:
        await lease.release()


async def _record(
    graph: ThreadOperations[Any],
    session: ThreadSession,
    state: AgentState,
    ran: _Ran,
    noted: Message | None,
) -> tuple[AgentState, list[Message]]:
    """Add the call to ``state``; return the state and the messages added.

    First the results of calls the thread ended with, then the note, the
    call's pair and its ``ToolResult.state``. An update the state refuses
    (an unknown field, a value of the wrong type) may have been merged in
    part, so the thread is read again and the call recorded as failed: the
    tool ran, and that is never lost.
    """
    closed = close_interrupted_calls(state, graph.id_generator)
    before: list[tuple[str, Any]] = [] if closed is None else closed.items
    if noted is not None:
        before.append(("direct call note", [noted]))
    try:
        applied = graph.schema.apply(state, Updates([*before, *ran.records(graph)]), "direct call")
    except StateError as exc:
        reloaded = await ThreadSession(checkpointer=session.checkpointer, key=session.key).load(
            graph.state_class
        )
        state = reloaded if reloaded is not None else graph._fresh_state()
        ran.outcome = ToolOutcome(
            f"tool {ran.call.name!r} ran, but its state update was refused: {exc}", True
        )
        return await _record(graph, session, state, ran, noted)
    return state, applied.messages


def _end_turn(state: AgentState, turn_start: int) -> None:
    """Mark the direct call as a completed turn that began at version ``turn_start``."""
    meta = state.execution_meta
    meta.turn_start, meta.step, meta.current_node = turn_start, 1, DIRECT_NODE
    meta.status, meta.next_node, meta.error, meta.stop_requested = "completed", None, None, False
    meta.interrupt_kind = meta.interrupt_value = None
    meta.resume_values = []
