"""``Send``: one task of a map step, a node run over an input of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Send"]


@dataclass(frozen=True, slots=True)
class Send:
    """Run ``node`` in the next step with ``arg`` as its input, instead of the graph's state.

    A router (or a ``Command(goto=...)``) returns several to map one node over
    many inputs: each is a task of its own, run concurrently with the step's
    other tasks, and what each returns is merged into the state through its
    reducers, in the order the ``Send`` items were returned (docs/graph.md).
    With a checkpointer ``arg`` must be JSON data: it is saved with the step.
    """

    node: str
    arg: Any = None
