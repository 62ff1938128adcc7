"""The wire words of remote (client-side) tool calls, shared by the runtime, server and client.

They sit in the data model, beside ``RemoteToolCallBlock`` (``message_block``),
so the client can use them without importing the graph runtime. The pause
itself, its deadlines and the checks of the answers live in
``tenxgraph.core.graph._remote_tools``.

A run pausing for remote calls stores ``interrupt_kind == REMOTE_CALLS_KIND``
(a user's ``interrupt(value)`` is always ``"inside"``, whatever ``value``
holds); the server shows that pause's ``__interrupt__`` item with
``"kind": REMOTE_CALLS_KIND``, and clients recognise it by that key, never by
the shape of the value (which a user's interrupt could copy).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

__all__ = [
    "REMOTE_CALLS_KIND",
    "REMOTE_CALLS_TYPE",
    "TOOL_RESULTS_KEY",
    "is_remote_pause",
    "remote_tool_result",
    "remote_tool_resume",
]

REMOTE_CALLS_TYPE = "remote_tool_calls"
"""The ``type`` of the interrupt value listing the calls: ``{"type", "calls": [...]}``."""

REMOTE_CALLS_KIND: Literal["remote_tool_calls"] = "remote_tool_calls"
"""The ``interrupt_kind`` of the runtime's pause for remote calls, and its item's ``kind``."""

TOOL_RESULTS_KEY = "tool_results"
"""The key of a resume value answering remote calls: ``{"tool_results": [...]}``."""


def remote_tool_result(call_id: str, output: Any, *, is_error: bool = False) -> dict[str, Any]:
    """One entry of a resume's ``tool_results``: ``{"call_id", "output", "is_error"}``."""
    return {"call_id": call_id, "output": output, "is_error": is_error}


def remote_tool_resume(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The resume value answering remote calls with ``results`` (``remote_tool_result`` entries)."""
    return {TOOL_RESULTS_KEY: list(results)}


def is_remote_pause(item: Any) -> bool:
    """True for an ``__interrupt__`` item (server JSON) of the runtime's pause for remote calls."""
    return isinstance(item, dict) and item.get("kind") == REMOTE_CALLS_KIND
