"""Tool exchanges in a message list: which result answers which call, for the message utilities.

``trim_messages`` and ``filter_messages`` keep or drop a tool call together
with its results. They read the list with the pairing rule of
``tenxgraph.core.state.pairing``: a result answers a call of the nearest
message before it that is not a tool message, once; any other result is an
*orphan*, and neither utility ever returns one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from tenxgraph.core.state.message import Message, Role
from tenxgraph.core.state.message_block import ContentBlock, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.message_input import ROLE_ALIASES, as_messages
from tenxgraph.errors import ConfigError, StateError

__all__ = [
    "Exchanges",
    "message_list",
    "read_exchanges",
    "role_names",
    "strip_blocks",
]


@dataclass(slots=True)
class Exchanges:
    """The tool exchanges of one message list, by position."""

    results_of: dict[tuple[int, str], list[int]] = field(default_factory=dict)
    """(call message index, call id) -> indexes of the tool messages answering it."""
    call_of: dict[tuple[int, int], tuple[int, str]] = field(default_factory=dict)
    """(tool message index, block index) -> the call it answers; orphans are absent."""

    def call_key(self, index: int, block: int) -> tuple[int, str] | None:
        """The call the result at (message ``index``, ``block``) answers, or None (orphan)."""
        return self.call_of.get((index, block))


def message_list(owner: str, messages: object) -> list[Message]:
    """``messages`` (a list or tuple of message-like values) as Messages; else ``StateError``."""
    if not isinstance(messages, list | tuple):
        raise StateError(
            f"{owner}: messages must be a list of messages, got {type(messages).__name__}"
        )
    return as_messages(messages, f"{owner}: messages")


def read_exchanges(messages: Sequence[Message]) -> Exchanges:
    """Pair every tool result of ``messages`` with its call, in one pass."""
    found = Exchanges()
    caller = -1
    pending: set[str] = set()
    for index, message in enumerate(messages):
        if message.role != "tool":
            caller = index
            calls = message.tool_calls() if message.role == "assistant" else []
            pending = {call.id for call in calls}
            for call_id in pending:
                found.results_of[(index, call_id)] = []
            continue
        for position, block in enumerate(message.content):
            if not isinstance(block, ToolResultBlock):
                continue
            if block.call_id in pending:
                pending.discard(block.call_id)
                key = (caller, block.call_id)
                found.call_of[(index, position)] = key
                found.results_of[key].append(index)
    return found


def strip_blocks(message: Message, keep: Sequence[bool]) -> Message | None:
    """``message`` with only the blocks ``keep`` marks; None when no content is left.

    The same object when every block is kept. A tool message left without a
    tool result, or an assistant message left with nothing, is dropped
    (None); a copy loses its raw provider tool calls (``tools_calls``).
    """
    if all(keep):
        return message
    content: list[ContentBlock] = [b for b, k in zip(message.content, keep, strict=True) if k]
    if message.role == "tool" and not any(isinstance(b, ToolResultBlock) for b in content):
        return None
    if not content:
        return None
    update: dict[str, object] = {"content": content}
    if any(isinstance(b, ToolCallBlock) for b in message.content):
        update["tools_calls"] = None
    return message.model_copy(update=update)


def role_names(
    owner: str, name: str, value: str | Collection[str] | None, *, refuse: Mapping[str, str] = {}
) -> frozenset[Role] | None:
    """The roles an option names (a role or a list of roles; LangChain's names accepted).

    ``"human"`` is ``"user"`` and ``"ai"`` is ``"assistant"`` (``ROLE_ALIASES``).
    Anything else raises ``ConfigError`` naming ``owner`` and ``name``;
    ``refuse`` maps roles the option cannot take to the reason.
    """
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if isinstance(items, Mapping) or not isinstance(items, Collection):
        raise ConfigError(f"{owner}: {name} must be a role or a list of roles, got {value!r}")
    roles: set[Role] = set()
    for item in items:
        role = ROLE_ALIASES.get(item) if isinstance(item, str) else None
        if role is None:
            known = ", ".join(repr(r) for r in ROLE_ALIASES)
            raise ConfigError(f"{owner}: {name} holds {item!r}, not a role ({known})")
        if role in refuse:
            raise ConfigError(f"{owner}: {name} cannot be {item!r}: {refuse[role]}")
        roles.add(role)
    return frozenset(roles)
