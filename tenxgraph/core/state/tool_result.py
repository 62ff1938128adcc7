"""``ToolResult``: what a tool returns when it must also change graph state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolResult"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's answer for the model plus an update for the graph state.

    ``message`` is what the model reads (a string, JSON data or content
    blocks); ``state`` maps field names of the graph's state class to new
    values, merged through each field's reducer.
    """

    message: Any
    state: dict[str, Any] = field(default_factory=dict)
