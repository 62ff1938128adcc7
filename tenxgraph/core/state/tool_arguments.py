"""Tool-call arguments from a model: one rule for every adapter.

A model writes a tool call's arguments as JSON text, or its SDK hands them
over already decoded. ``parse_tool_arguments`` is the one place either is
turned into ``ToolCallBlock.args``. Arguments that are not a JSON object are
never guessed at: not JSON at all (typically an answer cut off by the token
limit, ``{"pattern": "tmp/*.lo``), JSON of another kind (``[1, 2]``), or
holding what JSON cannot (NaN, lone surrogates). For such a call:

- the call is kept in the assistant message, with ``args={}``, so every call
  still gets its result;
- ``Message.metadata["invalid_tool_args"]`` maps the call id to
  ``{"arguments": <the raw text>, "error": <why it was refused>}``;
- the tool never runs: ``ToolNode`` answers the call with a failed
  ``ToolResultBlock`` quoting the error and the start of the text, so the
  model can call again with complete arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenxgraph.core.state.json_policy import check_json_data, parse_json, replace_lone_surrogates
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolCallBlock

__all__ = [
    "DIRECT_CALL_KEY",
    "INVALID_TOOL_ARGS_KEY",
    "ParsedArguments",
    "invalid_tool_args",
    "parse_tool_arguments",
    "refusal_text",
    "tool_call",
]

INVALID_TOOL_ARGS_KEY = "invalid_tool_args"
"""``Message.metadata`` key: ``{call_id: {"arguments": raw text, "error": reason}}``
for each call of the message whose arguments were refused."""

DIRECT_CALL_KEY = "direct_tool_call"
"""``Message.metadata`` key (value True) of the messages a direct ``call_tool`` records:
the application called the tool, not the model (the timeline says so)."""

QUOTED_CHARS = 200
"""How much of refused arguments the model is shown in its error result."""


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """A call's arguments: ``args`` when usable, else ``error`` says why they were refused."""

    args: dict[str, Any]
    """The arguments to run the tool with (``{}`` when refused)."""
    error: str | None = None
    """Why the arguments were refused; None when they are a valid JSON object."""
    raw: str = ""
    """The arguments as the model wrote them (JSON text), kept when refused."""


def parse_tool_arguments(raw: object, *, complete: bool = True) -> ParsedArguments:
    """Parse a call's arguments: JSON text, or a value an SDK already decoded.

    Empty text and None mean no arguments. ``complete=False`` says the
    provider cut the call off before its arguments ended (a stream that
    stopped mid-call): they are refused even if what arrived parses.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ParsedArguments({}, None if complete else _CUT_OFF, raw if raw else "")
    if isinstance(raw, str):
        text = raw
        try:
            value: Any = parse_json(text)
        except (ValueError, RecursionError) as exc:
            return ParsedArguments({}, f"the arguments are not valid JSON ({_reason(exc)})", text)
    else:
        value, text = raw, _as_text(raw)
    if not isinstance(value, Mapping):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        return ParsedArguments({}, f"the arguments are {kind}, not a JSON object", text)
    try:
        check_json_data(value, "the arguments")
    except ValueError as exc:
        return ParsedArguments({}, str(exc), text)
    key = None if isinstance(raw, str) else _non_string_key(value, "the arguments")
    if key is not None:  # JSON text turns such a key into a string; Python data must not
        return ParsedArguments({}, key, repr(raw))
    if not complete:
        return ParsedArguments({}, _CUT_OFF, text)
    return ParsedArguments(dict(value), None, text)


def tool_call(
    call_id: str, name: str, raw: object, refused: dict[str, Any], *, complete: bool = True
) -> ToolCallBlock:
    """The ``ToolCallBlock`` for one call of a model answer (adapters build every call here).

    When the arguments are refused, the call gets ``args={}`` and ``refused``
    (the future ``metadata["invalid_tool_args"]``) records the raw text and why.
    """
    parsed = parse_tool_arguments(raw, complete=complete)
    if parsed.error is not None:
        refused[call_id] = {
            "arguments": replace_lone_surrogates(parsed.raw),
            "error": parsed.error,
        }
    return ToolCallBlock(id=call_id, name=name, args=parsed.args)


def invalid_tool_args(message: Message) -> dict[str, str]:
    """The calls of ``message`` whose arguments were refused, by id: what the model reads."""
    entries = message.metadata.get(INVALID_TOOL_ARGS_KEY)
    if not isinstance(entries, dict):
        return {}
    names = {call.id: call.name for call in message.tool_calls()}
    refusals: dict[str, str] = {}
    for call_id, entry in entries.items():
        if call_id not in names:
            continue
        if isinstance(entry, dict):
            error, raw = entry.get("error"), entry.get("arguments")
        else:  # a bare text: the raw arguments, as older messages stored them
            error, raw = None, entry
        refusals[call_id] = refusal_text(
            names[call_id],
            error if isinstance(error, str) else "the arguments are not a JSON object",
            raw if isinstance(raw, str) else "",
        )
    return refusals


def refusal_text(name: str, error: str, raw: str) -> str:
    """What the model reads for a call whose arguments were refused."""
    shown = raw if len(raw) <= QUOTED_CHARS else raw[:QUOTED_CHARS] + "..."
    return (
        f"tool {name!r} was not run: {error}. The arguments received were: {shown!r}. "
        "Call the tool again with the complete arguments as one JSON object."
    )


_CUT_OFF = "the call was cut off before its arguments were complete"
_JSON_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def _non_string_key(value: object, where: str) -> str | None:
    """Where decoded arguments hold a dict key that is not a string (JSON keys are strings)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}, which is not a string"
            found = _non_string_key(item, f"{where}[{key!r}]")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _non_string_key(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def _as_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
