"""Message-like input: ``(role, text)`` pairs and role/content dicts turned into ``Message``.

Code written for other agent libraries passes messages as ``("user", "hi")``
or ``{"role": "user", "content": "hi"}``. These are accepted where messages
enter a graph (the ``messages`` of an invoke input, a ``context`` update, a
node's returned list) and by the ``add_messages`` reducer, and converted
here, at the boundary: inside, ``Message`` stays the only message type.

Accepted, per message:

- a ``Message`` (kept as it is);
- a ``str``: a user message with that text;
- ``(role, content)``: ``role`` one of ``user``/``human``, ``assistant``/``ai``,
  ``system``; ``content`` a text or a list of content blocks;
- a dict with ``role`` and ``content``, optionally ``id`` (or
  ``message_id``), ``tool_calls`` on an assistant message (each
  ``{"id", "name", "args"}``, or the OpenAI ``{"id", "function": {"name",
  "arguments"}}`` form), ``tool_call_id`` on a tool message (required with
  text content), and any other ``Message`` field. A serialized ``Message``
  (``message.model_dump()``) is such a dict.

A tool message needs the id of the call it answers, which a pair cannot
carry, so ``("tool", text)`` is refused with a message saying to use a dict.
Anything else raises ``StateError`` naming where it was (``invoke input
'messages'[2]``) and what was expected; unknown dict keys are refused, not
dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

from pydantic import ValidationError

from tenxgraph.core.state.message import Message, Role
from tenxgraph.core.state.message_block import TextBlock, ToolCallBlock, ToolResultBlock
from tenxgraph.errors import StateError

__all__ = ["ROLE_ALIASES", "MessageLike", "as_message", "as_messages"]

MessageLike: TypeAlias = Message | str | tuple[str, Any] | Mapping[str, Any]
"""What ``as_message`` accepts: a Message, a user text, a (role, content) pair, or a dict."""

ROLE_ALIASES: Mapping[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
}
"""Role names accepted in message-like input, and the ``Message.role`` each becomes."""

_EXPECTED = (
    "expected a Message, a text, a (role, content) pair such as ('user', 'hi'), "
    "or a dict such as {'role': 'user', 'content': 'hi'}"
)
_EXTRA_KEYS = frozenset({"id", "tool_call_id", "tool_calls"})


def as_messages(value: Any, where: str = "messages") -> list[Message]:
    """Convert one message-like value, or a list or tuple of them, into a list of Messages.

    A pair whose first item is a role name counts as one message, so
    ``("user", "hi")`` is one message and ``[("user", "hi")]`` a list of one.
    """
    if isinstance(value, (Message, str, Mapping)) or _is_pair(value):
        return [as_message(value, where)]
    if not isinstance(value, (list, tuple)):
        raise StateError(f"{where}: {_EXPECTED}, or a list of them; got {_describe(value)}")
    return [
        item if isinstance(item, Message) else as_message(item, f"{where}[{index}]")
        for index, item in enumerate(value)
    ]


def as_message(value: Any, where: str = "message") -> Message:
    """Convert one message-like value into a ``Message``; ``where`` names it in errors."""
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.text_message(value)
    if isinstance(value, tuple):
        if not _is_pair(value):
            raise StateError(f"{where}: {_EXPECTED}; got {_describe(value)}")
        role, content = value
        if ROLE_ALIASES.get(role) == "tool":
            raise StateError(
                f"{where}: a tool message answers a tool call, and a pair cannot say which; "
                "pass {'role': 'tool', 'content': ..., 'tool_call_id': ...} instead"
            )
        return _from_dict({"role": role, "content": content}, where)
    if isinstance(value, Mapping):
        return _from_dict(value, where)
    raise StateError(f"{where}: {_EXPECTED}; got {_describe(value)}")


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)


def _from_dict(value: Mapping[str, Any], where: str) -> Message:
    unknown = sorted(set(value) - set(Message.model_fields) - _EXTRA_KEYS)
    if unknown:
        raise StateError(
            f"{where}: unknown message key(s) {', '.join(map(repr, unknown))}; expected "
            f"'role', 'content', 'id', 'tool_call_id', 'tool_calls' or a Message field"
        )
    missing = [key for key in ("role", "content") if key not in value]
    if missing:
        raise StateError(f"{where}: the message has no {' or '.join(map(repr, missing))}")
    role = _role(value["role"], where)
    fields = {k: v for k, v in value.items() if k not in _EXTRA_KEYS}
    if "id" in value:
        if "message_id" in value:
            raise StateError(f"{where}: give 'id' or 'message_id', not both")
        fields["message_id"] = value["id"]
    content = _content(value["content"], where)
    if role == "tool":
        content = _tool_result(value, content, where)
    elif "tool_call_id" in value:
        raise StateError(f"{where}: 'tool_call_id' belongs on a tool message, not {role!r}")
    if value.get("tool_calls"):
        if role != "assistant":
            raise StateError(f"{where}: 'tool_calls' belong on an assistant message, not {role!r}")
        content = [*content, *_tool_calls(value["tool_calls"], where)]
    fields["role"], fields["content"] = role, content
    try:
        return Message.model_validate(fields)
    except ValidationError as exc:
        raise StateError(f"{where}: not a valid message: {exc}") from None


def _tool_result(value: Mapping[str, Any], content: list[Any], where: str) -> list[Any]:
    """A tool message's content: with ``tool_call_id``, one result block for that call."""
    if "tool_call_id" not in value:
        if isinstance(value["content"], str):
            raise StateError(f"{where}: a tool message needs 'tool_call_id', the call it answers")
        return content  # a serialized tool message: its blocks are validated as they are
    single_text = len(content) == 1 and isinstance(content[0], TextBlock)
    output = content[0].text if single_text else content
    return [_validated(ToolResultBlock, where, call_id=value["tool_call_id"], output=output)]


def _role(role: Any, where: str) -> Role:
    if isinstance(role, str) and role in ROLE_ALIASES:
        return ROLE_ALIASES[role]
    raise StateError(
        f"{where}: unknown role {role!r}; expected one of {', '.join(map(repr, ROLE_ALIASES))}"
    )


def _content(content: Any, where: str) -> list[Any]:
    """Text becomes one TextBlock; in a list, texts become TextBlocks.

    The other items are validated later as content blocks
    (``{"type": "text", "text": ...}`` is one already).
    """
    if content is None:
        return []
    if isinstance(content, str):
        return [TextBlock(text=content)] if content else []
    if isinstance(content, (list, tuple)):
        return [TextBlock(text=item) if isinstance(item, str) else item for item in content]
    raise StateError(
        f"{where}: 'content' must be a text or a list of content blocks, got {_describe(content)}"
    )


def _tool_calls(calls: Any, where: str) -> list[ToolCallBlock]:
    if not isinstance(calls, list):
        raise StateError(f"{where}: 'tool_calls' must be a list, got {_describe(calls)}")
    return [_tool_call(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls)]


def _tool_call(call: Any, where: str) -> ToolCallBlock:
    if not isinstance(call, Mapping):
        raise StateError(f"{where}: expected a dict with 'id', 'name' and 'args'")
    function = call.get("function")
    if isinstance(function, Mapping):  # the OpenAI form: arguments as a JSON text
        name, args = function.get("name"), function.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError as exc:
                raise StateError(f"{where}: 'arguments' is not valid JSON: {exc}") from None
    else:
        name, args = call.get("name"), call.get("args", {})
    block: ToolCallBlock = _validated(ToolCallBlock, where, id=call.get("id"), name=name, args=args)
    return block


def _validated(block: type[Any], where: str, **fields: Any) -> Any:
    try:
        return block(**fields)
    except ValidationError as exc:
        raise StateError(f"{where}: not a valid {block.__name__}: {exc}") from None


def _describe(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"
