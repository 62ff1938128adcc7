"""Answer a paused run at the terminal: a question, or tool calls waiting for approval.

A ``HumanApproval`` pause (its value's ``type`` is ``tool_approval``) is
asked call by call: approve, edit the arguments (JSON), or reject with a
reason the model reads. Any other pause shows its value and takes a line
as the answer. The run is resumed with the answer, and asked again while
it pauses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tenxgraph.cli.prompt import Reader
from tenxgraph.cli.render import Console
from tenxgraph.cli.turns import stream_turn
from tenxgraph.core.graph import CompiledGraph, RunResult

__all__ = ["ask", "settle_pauses"]

_KEYS = {"a": "approve", "e": "edit", "r": "reject"}


async def settle_pauses(
    app: CompiledGraph[Any],
    result: RunResult,
    config: Mapping[str, Any],
    console: Console,
    read: Reader,
) -> RunResult:
    """Ask, resume, and again while the run pauses; the last run's result."""
    while result.interrupt is not None:
        answer = await ask(result.interrupt.value, console, read)
        result = await stream_turn(app, {"resume": answer}, config, console)
    return result


async def ask(value: Any, console: Console, read: Reader) -> Any:
    """The person's answer to a pause whose interrupt value is ``value``."""
    calls = value.get("calls") if isinstance(value, dict) else None
    if isinstance(value, dict) and value.get("type") == "tool_approval" and isinstance(calls, list):
        if value.get("error"):
            console.line(f"the last answer did not fit: {value['error']}", "yellow")
        if value.get("description"):
            console.line(str(value["description"]), "yellow")
        allowed = [d for d in value.get("allowed", list(_KEYS.values())) if d in _KEYS.values()]
        return {"decisions": [await _decide(call, allowed, console, read) for call in calls]}
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    console.line(f"paused: {shown}", "yellow")
    return (await read("answer> ")).strip()


async def _decide(
    call: dict[str, Any], allowed: list[str], console: Console, read: Reader
) -> dict[str, Any]:
    args = json.dumps(call.get("args", {}), ensure_ascii=False)
    console.line(f"tool call {call.get('name')}({args})", "yellow")
    keys = [key for key, kind in _KEYS.items() if kind in allowed]
    choice = ", ".join(f"{key}={_KEYS[key]}" for key in keys)
    while True:
        typed = (await read(f"{choice}> ")).strip().lower()[:1]
        if typed in keys:
            break
        console.line(f"type one of {', '.join(keys)}", "yellow")
    decision: dict[str, Any] = {"type": _KEYS[typed], "call_id": call.get("id")}
    if decision["type"] == "edit":
        decision["args"] = await _arguments(console, read)
    elif decision["type"] == "reject":
        reason = (await read("why (the model reads it)> ")).strip()
        if reason:
            decision["message"] = reason
    return decision


async def _arguments(console: Console, read: Reader) -> dict[str, Any]:
    while True:
        text = await read("arguments (a JSON object)> ")
        try:
            args = json.loads(text)
        except ValueError as exc:
            console.line(f"not JSON: {exc}", "yellow")
            continue
        if isinstance(args, dict):
            return args
        console.line("the arguments must be a JSON object", "yellow")
