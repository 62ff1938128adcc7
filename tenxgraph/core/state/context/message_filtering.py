"""``filter_messages``: select messages by role, id and tool call, LangChain style.

Stateless, like ``trim_messages``: it returns a new list and touches neither
the messages nor any state. A tool call and its results are one exchange,
kept only when both sides pass the filters, so the result never holds a call
without its results or a result without its call.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tenxgraph.core.state.context.exchanges import (
    message_list,
    read_exchanges,
    role_names,
    strip_blocks,
)
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.message_input import MessageLike
from tenxgraph.errors import ConfigError

__all__ = ["filter_messages"]

_OWNER = "filter_messages"


def filter_messages(
    messages: Sequence[MessageLike],
    *,
    include_roles: str | Collection[str] | None = None,
    exclude_roles: str | Collection[str] | None = None,
    include_ids: str | int | Collection[str | int] | None = None,
    exclude_ids: str | int | Collection[str | int] | None = None,
    include_tool_calls: bool | str | Collection[str] = True,
    exclude_tool_calls: bool | str | Collection[str] | None = None,
) -> list[Message]:
    """Keep the messages that meet an include condition and no exclude condition.

    As in LangChain, a message is kept when it meets at least one include
    condition (``include_roles``, ``include_ids``; with neither, every
    message does) and no exclude condition (``exclude_roles``,
    ``exclude_ids``). Roles may be given by LangChain's names too
    (``"human"``, ``"ai"``).

    Tool exchanges are then kept whole or not at all: a call stays only when
    its message is kept, every message holding its results is kept, and the
    tool-call filters allow it. A dropped call leaves its assistant message
    (which keeps its text, or goes when nothing is left), and its results
    leave their tool messages (which go when no result is left). A result
    that answers no call is never returned; a call the input left without a
    result (the model's pending request) stays if its message does.

    Args:
        messages: Messages or message-like values.
        include_roles: Role(s) to keep.
        exclude_roles: Role(s) to drop.
        include_ids: Message id(s) to keep.
        exclude_ids: Message id(s) to drop.
        include_tool_calls: True keeps every tool exchange, False none; a
            collection keeps only the exchanges whose call id or tool name
            it holds.
        exclude_tool_calls: LangChain's option: True drops every tool
            exchange; a collection drops those whose call id or tool name
            it holds.

    Returns:
        A new list in the input's order; unchanged messages are the input
        objects, messages that lost tool calls or results are copies.

    Raises:
        ConfigError: an option has the wrong kind of value or names no role.
        StateError: ``messages`` holds something that is not message-like.
    """
    included_roles = role_names(_OWNER, "include_roles", include_roles)
    excluded_roles = role_names(_OWNER, "exclude_roles", exclude_roles) or frozenset()
    included_ids = _ids("include_ids", include_ids)
    excluded_ids = _ids("exclude_ids", exclude_ids) or frozenset()
    allowed = _call_test(include_tool_calls, exclude_tool_calls)
    listed = message_list(_OWNER, messages)

    def selected(message: Message) -> bool:
        if message.role in excluded_roles or message.message_id in excluded_ids:
            return False
        if included_roles is None and included_ids is None:
            return True
        return (included_roles is not None and message.role in included_roles) or (
            included_ids is not None and message.message_id in included_ids
        )

    kept = [selected(message) for message in listed]
    return _keep_whole_exchanges(listed, kept, allowed)


def _keep_whole_exchanges(
    messages: list[Message], kept: list[bool], allowed: _CallTest
) -> list[Message]:
    exchanges = read_exchanges(messages)
    calls = {
        (index, call.id)
        for index, message in enumerate(messages)
        if kept[index] and message.role == "assistant"
        for call in message.tool_calls()
        if allowed(call) and all(kept[r] for r in exchanges.results_of.get((index, call.id), ()))
    }
    result: list[Message] = []
    for index, message in enumerate(messages):
        if not kept[index]:
            continue
        if message.role == "tool":
            keep = [
                not isinstance(block, ToolResultBlock)
                or exchanges.call_key(index, position) in calls
                for position, block in enumerate(message.content)
            ]
        elif message.role == "assistant":
            keep = [
                not isinstance(block, ToolCallBlock) or (index, block.id) in calls
                for block in message.content
            ]
        else:
            result.append(message)
            continue
        stripped = strip_blocks(message, keep)
        if stripped is not None:
            result.append(stripped)
    return result


def _ids(name: str, value: object) -> frozenset[str | int] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str | int) and not isinstance(value, bool) else value
    if isinstance(items, Mapping) or not isinstance(items, Collection):
        raise ConfigError(f"{_OWNER}: {name} must be a message id or a list of ids, got {value!r}")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int):
            raise ConfigError(f"{_OWNER}: {name} holds {item!r}, not a message id")
    return frozenset(items)


class _CallTest:
    """Whether a tool call passes ``include_tool_calls`` and ``exclude_tool_calls``."""

    __slots__ = ("excluded", "included")

    def __init__(self, included: bool | frozenset[str], excluded: bool | frozenset[str]) -> None:
        self.included = included
        self.excluded = excluded

    def __call__(self, call: ToolCallBlock) -> bool:
        """True when ``call`` (by id or tool name) is included and not excluded."""
        return _matches(self.included, call) and not _matches(self.excluded, call)


def _matches(selection: bool | frozenset[str], call: ToolCallBlock) -> bool:
    if isinstance(selection, bool):
        return selection
    return call.id in selection or call.name in selection


def _call_test(include: object, exclude: object) -> _CallTest:
    return _CallTest(
        _call_selection("include_tool_calls", include),
        False if exclude is None else _call_selection("exclude_tool_calls", exclude),
    )


def _call_selection(name: str, value: object) -> bool | frozenset[str]:
    if isinstance(value, bool):
        return value
    items = [value] if isinstance(value, str) else value
    if (
        isinstance(items, Mapping)
        or not isinstance(items, Collection)
        or not all(isinstance(item, str) for item in items)
    ):
        raise ConfigError(
            f"{_OWNER}: {name} must be True, False, or call ids / tool names (strings), "
            f"got {value!r}"
        )
    return frozenset(items)
