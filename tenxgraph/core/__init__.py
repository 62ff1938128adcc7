"""The core of tenxgraph: state, models and the graph runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Agent", "CompiledGraph", "StateGraph", "ToolNode", "create_agent"]

if TYPE_CHECKING:
    from tenxgraph.core.graph import Agent, CompiledGraph, StateGraph, ToolNode, create_agent


def __getattr__(name: str) -> Any:
    """Import the runtime on first use, so the data model loads alone."""
    if name in __all__:
        from tenxgraph.core import graph

        return getattr(graph, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
