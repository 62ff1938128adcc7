"""Where a run enters its thread: a new turn, a resume, a retry, or a dead run's continuation.

The thread's last status decides, with the input:

- ``interrupted``: only ``{"resume": answer}`` is accepted; the run continues
  the paused node.
- ``error``: the failed turn is kept with its input. ``invoke(None, config)``
  retries it from the node that failed; new messages are refused (sending
  them would follow half a turn and, re-sent by a retrying script, duplicate
  the input) until ``rollback(config)`` discards the failed turn.
- ``running`` without a live holder (its run died): input-less runs continue
  where it stopped; new messages start a new turn.
- otherwise a new turn starts at the entry, or, with ``{"goto": ...}``, at
  the node(s) it names (LangGraph's ``Command(goto=...)`` as a run's input:
  one name, a ``Send``, or a list of them, run as one step). A paused or
  failed turn must be resumed, retried or rolled back first.

A new turn on a thread whose last assistant message has calls without a
result (a stopped or dead run's, or a conversation the thread was created
from) first settles them (``answer_pending_calls``): a thread at rest
continued without new messages runs them at the graph's ``ToolNode``, as a
model's calls; in every other case they are answered with a failed
"interrupted" result, so the stored log stays paired.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph._command import PARALLEL, Send
from tenxgraph.core.graph._node import Node
from tenxgraph.core.graph._tool_node import ToolNode, close_interrupted_calls
from tenxgraph.core.state.agent_state import AgentState, ExecMeta
from tenxgraph.core.state.message import Message, new_message_id
from tenxgraph.core.state.message_block import ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.message_input import as_messages
from tenxgraph.core.state.pairing import answer_skipped_calls, unanswered_calls
from tenxgraph.errors import StateError

if TYPE_CHECKING:
    from tenxgraph.core.graph._thread_ops import ThreadOperations

__all__ = [
    "Entry",
    "answer_pending_calls",
    "answered_calls",
    "check_at_rest",
    "check_input",
    "entry_point",
    "goto_entry",
    "input_messages_of",
]

_AT_REST = frozenset({"idle", "completed"})
"""Statuses of a thread whose latest turn ended normally (or that never ran)."""

_INPUT_KEYS = frozenset({"messages", "state", "resume", "goto"})


@dataclass(slots=True)
class Entry:
    """Where a run starts and whether it begins a new turn.

    Not frozen: a frozen dataclass sets each field through ``object.__setattr__``,
    three times the cost of a plain one, and every run makes one.
    """

    node: str
    new_turn: bool
    skip_interrupt_before: bool = False


def check_input(input: object) -> Mapping[str, Any]:
    """``input`` as a run's input mapping; a clear error for anything else."""
    if type(input) is not dict and not isinstance(input, Mapping):  # dict: no ABC check
        raise StateError(
            f"invoke input must be a dict such as {{'messages': [...]}} or "
            f"{{'resume': answer}}, got {type(input).__name__}"
        )
    if not input.keys() <= _INPUT_KEYS:
        unknown = set(input) - _INPUT_KEYS
        raise StateError(
            f"invoke input has unknown key(s) {sorted(unknown)}; "
            "expected 'messages', 'state', 'goto' and/or 'resume'"
        )
    return input


def run_entry(
    meta: ExecMeta, input: Mapping[str, Any], thread_id: Any, nodes: Mapping[str, Node], first: str
) -> tuple[Entry, list[dict[str, Any]]]:
    """Where the run enters (``entry_point``, or ``goto_entry`` for a ``goto`` input)."""
    if "goto" in input:
        return goto_entry(meta, input, thread_id, nodes)
    return entry_point(meta, input, thread_id, first), []


def entry_point(meta: ExecMeta, input: Mapping[str, Any], thread_id: Any, first: str) -> Entry:
    """Where a run with ``input`` enters a thread whose run metadata is ``meta``.

    ``first`` is the graph's entry (``START`` itself for a conditional entry).
    """
    resuming = "resume" in input
    has_messages = bool(input.get("messages"))
    if meta.status == "interrupted":
        if not resuming:
            check_at_rest(meta, thread_id)
        return Entry(meta.next_node or first, False, meta.interrupt_kind == "before")
    if resuming:
        raise StateError("nothing to resume: the thread is not paused at an interrupt")
    if meta.status == "error":
        if has_messages:
            check_at_rest(meta, thread_id)
        return Entry(meta.next_node or first, False)
    if meta.status == "running" and meta.next_node and not has_messages:
        return Entry(meta.next_node, False)  # a run that died mid-way continues
    if meta.status == "stopped" and meta.next_node == PARALLEL and not has_messages:
        return Entry(PARALLEL, False)  # a parallel step stopped midway: its finished tasks stay
    return Entry(first, True)


def goto_entry(
    meta: ExecMeta, input: Mapping[str, Any], thread_id: Any, nodes: Mapping[str, Node]
) -> tuple[Entry, list[dict[str, Any]]]:
    """Where a run with ``{"goto": ...}`` enters: a new turn at the node(s) it names.

    Returns the entry and, for several targets (or a ``Send``), the step's
    tasks (``ExecMeta.tasks``, entered as ``PARALLEL``).
    """
    goto = input["goto"]
    if "resume" in input:
        raise StateError(
            "give 'goto' or 'resume', not both: a resumed node goes on along the graph's "
            "edges; resume first, then run again with 'goto'"
        )
    if meta.status in ("interrupted", "error"):
        check_at_rest(meta, thread_id, "going to another node")
    items = list(goto) if isinstance(goto, list | tuple) else [goto]
    if not items:
        raise StateError("'goto' names no node")
    tasks: list[dict[str, Any]] = []
    for item in items:
        node = item.node if isinstance(item, Send) else item
        if not isinstance(node, str) or node not in nodes:
            known = ", ".join(sorted(nodes))
            raise StateError(f"'goto' names no node of the graph: {node!r} (nodes: {known})")
        tasks.append({"node": node, "arg": item.arg} if isinstance(item, Send) else {"node": node})
    if len(tasks) == 1 and "arg" not in tasks[0]:
        return Entry(tasks[0]["node"], True), []
    return Entry(PARALLEL, True), tasks


def check_at_rest(meta: ExecMeta, thread_id: Any, action: str = "sending new messages") -> None:
    """Raise ``StateError`` when the thread's latest turn is paused or failed.

    Such a turn must be resumed (or retried) or discarded before the thread
    takes anything new, ``action``: new messages, or a recorded direct call.
    """
    if meta.status == "interrupted":
        raise StateError(
            f"thread {thread_id!r} is paused at node {meta.current_node!r}; continue it "
            "with invoke({'resume': answer}, config), or discard the paused turn with "
            f"rollback(config) before {action}"
        )
    if meta.status == "error":
        raise StateError(
            f"thread {thread_id!r}: its last turn failed at node {meta.next_node!r} "
            f"({meta.error}); retry it with invoke(None, config), or discard it with "
            f"rollback(config) before {action}"
        )


def input_messages_of(
    input: Mapping[str, Any],
    state: AgentState | None = None,
    new_id: Callable[[], str | int] = new_message_id,
) -> list[Message]:
    """The input's messages; ``("user", "hi")`` pairs and role/content dicts are converted.

    A call in the input that a later input message skips past (a client
    resending history with a call it never answered) gets a failed "not
    run" result before that message (``answer_skipped_calls``); calls of
    messages ``state`` already holds were settled when they were stored.
    """
    raw = input.get("messages")
    if raw is None:
        return []
    messages = _converted(raw)
    if len(messages) < 2:  # the usual input: no later message for a call to be skipped by
        return messages
    settled = state.message_index() if state is not None else ()
    return answer_skipped_calls(messages, settled=settled, new_id=new_id)


def _converted(raw: Any) -> list[Message]:
    if type(raw) is list:
        for item in raw:  # a loop, not all(...): no generator for the usual input
            if type(item) is not Message:
                break
        else:
            return list(raw)  # the usual input, as ``as_messages`` returns it, in one pass
    return as_messages(raw, "invoke input 'messages'")


def answered_calls(messages: list[Message]) -> set[str]:
    """The ids of the tool calls that ``messages`` carry results for."""
    return {
        block.call_id
        for message in messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }


def answer_pending_calls(
    state: AgentState, input_messages: list[Message], status: str, graph: ThreadOperations[Any]
) -> tuple[str | None, list[Message]]:
    """Settle, as a new turn starts, the calls the thread ends with that have no result.

    Returns the ``ToolNode`` the run enters to run them first, or None and
    the failed results added. They run first only when the thread is at rest
    (``status``: its last run completed, or it never ran: a conversation it was
    created from) and the turn brings no messages: continuing a conversation
    that ends in tool calls runs them (Strands does the same). New messages
    mean the user moved on, and a stopped run was stopped on purpose: then,
    as when no ``ToolNode`` has the tools, each call gets a failed result
    saying it was interrupted (calls the input answers excepted).
    """
    pending = unanswered_calls(state.context)
    if not pending:
        return None, []
    if not input_messages and status in _AT_REST:
        runner = _tool_node_for(pending, graph.nodes)
        if runner is not None:
            return runner, []
    answered = answered_calls(input_messages)
    closed = close_interrupted_calls(state, graph.id_generator, answered)
    if closed is None:
        return None, []
    return None, graph.schema.apply(state, closed, "interrupted tool calls").messages


def _tool_node_for(calls: list[ToolCallBlock], nodes: Mapping[str, Node]) -> str | None:
    """The first ``ToolNode`` of the graph that has a tool for every call."""
    names = {call.name for call in calls}
    for name, node in nodes.items():
        if isinstance(node, ToolNode) and names <= node.tools.keys():
            return name
    return None
