"""The core of tenxgraph: state, models and the graph runtime.

The exports are imported on first use, so the data model loads alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["Agent", "CompiledGraph", "StateGraph", "ToolNode", "create_agent"]

if TYPE_CHECKING:
    from tenxgraph.core.graph import Agent, CompiledGraph, StateGraph, ToolNode, create_agent
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"tenxgraph.core.graph": __all__})
