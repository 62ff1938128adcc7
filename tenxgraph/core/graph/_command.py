"""``Command``: a node's return value that routes and updates at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Command"]


@dataclass(frozen=True, slots=True)
class Command:
    """Go to ``goto`` next (a node name or ``END``), after merging ``update``.

    ``update`` takes anything a node may return: messages, a partial dict, a
    state object, or None.
    """

    goto: str
    update: Any = None
