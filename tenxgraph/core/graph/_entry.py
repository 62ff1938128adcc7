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
- otherwise a new turn starts at the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenxgraph.core.state.agent_state import ExecMeta
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.core.state.message_input import as_messages
from tenxgraph.errors import StateError

__all__ = ["Entry", "answered_calls", "check_input", "entry_point", "input_messages_of"]

_INPUT_KEYS = frozenset({"messages", "state", "resume"})


@dataclass(frozen=True, slots=True)
class Entry:
    """Where a run starts and whether it begins a new turn."""

    node: str
    new_turn: bool
    skip_interrupt_before: bool = False


def check_input(input: object) -> Mapping[str, Any]:
    """``input`` as a run's input mapping; a clear error for anything else."""
    if not isinstance(input, Mapping):
        raise StateError(
            f"invoke input must be a dict such as {{'messages': [...]}} or "
            f"{{'resume': answer}}, got {type(input).__name__}"
        )
    unknown = set(input) - _INPUT_KEYS
    if unknown:
        raise StateError(
            f"invoke input has unknown key(s) {sorted(unknown)}; "
            "expected 'messages', 'state' and/or 'resume'"
        )
    return input


def entry_point(meta: ExecMeta, input: Mapping[str, Any], thread_id: Any, first: str) -> Entry:
    """Where a run with ``input`` enters a thread whose run metadata is ``meta``.

    ``first`` is the graph's entry (``START`` itself for a conditional entry).
    """
    resuming = "resume" in input
    has_messages = bool(input.get("messages"))
    if meta.status == "interrupted":
        if not resuming:
            raise StateError(
                f"thread {thread_id!r} is paused at node {meta.current_node!r}; continue it "
                "with invoke({'resume': answer}, config), or discard the paused turn with "
                "rollback(config)"
            )
        return Entry(meta.next_node or first, False, meta.interrupt_kind == "before")
    if resuming:
        raise StateError("nothing to resume: the thread is not paused at an interrupt")
    if meta.status == "error":
        if has_messages:
            raise StateError(
                f"thread {thread_id!r}: its last turn failed at node {meta.next_node!r} "
                f"({meta.error}); retry it with invoke(None, config), or discard it with "
                "rollback(config) before sending new messages"
            )
        return Entry(meta.next_node or first, False)
    if meta.status == "running" and meta.next_node and not has_messages:
        return Entry(meta.next_node, False)  # a run that died mid-way continues
    return Entry(first, True)


def input_messages_of(input: Mapping[str, Any]) -> list[Message]:
    """The input's messages; ``("user", "hi")`` pairs and role/content dicts are converted."""
    raw = input.get("messages")
    if raw is None:
        return []
    return as_messages(raw, "invoke input 'messages'")


def answered_calls(messages: list[Message]) -> set[str]:
    """The ids of the tool calls that ``messages`` carry results for."""
    return {
        block.call_id
        for message in messages
        for block in message.content
        if isinstance(block, ToolResultBlock)
    }
