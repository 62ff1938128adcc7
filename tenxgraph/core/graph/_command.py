"""``Command``: a node's return value that routes and updates at once; ``Send``: one map task."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from tenxgraph.core.graph._send import Send

__all__ = ["PARALLEL", "Command", "Goto", "Send"]


Goto: TypeAlias = "str | Send | Sequence[str | Send]"
"""Where a node leads: a node name (or ``END``), a ``Send``, or several of them."""


@dataclass(frozen=True, slots=True)
class Command:
    """Go to ``goto`` next (a node, ``END``, a ``Send``, or a list), after merging ``update``.

    ``update`` takes anything a node may return: messages, a partial dict, a
    state object, or None. A list in ``goto`` runs its nodes in one parallel step.
    """

    goto: Goto
    update: Any = None


PARALLEL = "__parallel__"
"""The ``next_node`` of a run whose next step runs several tasks (``ExecMeta.tasks``)."""
