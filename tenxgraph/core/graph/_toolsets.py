"""Toolsets: tools that come from elsewhere and may change while a graph runs.

A ``Toolset`` (an MCP server's tools, ``tenxgraph.mcp.MCPTools``) goes
wherever a tool goes (``create_agent(tools=...)``, ``Agent``, ``ToolNode``),
next to plain tools. The runtime indexes both in one ``ToolIndex``, a live
mapping: a toolset's members are read each time the index is read, so a
tool the server adds or removes is seen by the next model call and the next
``ToolNode`` step without rebuilding the graph.

Decisions:

- **Reading is free, preparing may wait.** ``Toolset.tools()`` answers from
  what the toolset last learned, without I/O (the model request and the tool
  lookup are sync). Before the model is called and before a ``ToolNode``
  runs calls, the runtime awaits ``ToolIndex.aprepare()``, which lets each
  toolset connect, reconnect or list again; a toolset that cannot is left
  as it was (its own log line says why) and never fails the run.
- **A name once.** Plain tools' names are checked when the graph is built.
  A toolset's tool whose name a plain tool or an earlier toolset already has
  is left out of the index (a warning names both), because a server may add
  such a tool at any time and a run must not fail for it.
- **Lifetimes.** ``CompiledGraph.toolsets()`` lists a graph's toolsets, so
  whatever hosts the graph (``tenxgraph serve``'s workers, ``tenxgraph mcp``)
  prepares them at start and closes them at stop.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from tenxgraph.core.graph._tools import Tool
from tenxgraph.errors import ToolError

__all__ = ["ToolIndex", "Toolset", "index_tools"]

logger = logging.getLogger("tenxgraph.tools")


class Toolset(ABC):
    """A group of tools whose members are learned at run time (from an MCP server...)."""

    name: str = "toolset"
    """Names the toolset in log lines and errors."""

    @abstractmethod
    def tools(self) -> Sequence[Tool]:
        """The tools as last learned; no I/O (empty before the first ``aprepare``)."""

    async def aprepare(self) -> None:  # noqa: B027 - optional: a fixed toolset needs none
        """Connect or list again if needed; called before a run reads ``tools()``.

        Must not raise for an unreachable source: log it and keep the last list.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional: a toolset may hold nothing
        """Release what the toolset holds (a process, a session)."""


class ToolIndex(Mapping[str, Tool]):
    """Plain tools and toolsets by name: a live view, read again on every lookup."""

    def __init__(self, static: Mapping[str, Tool], toolsets: Sequence[Toolset] = ()) -> None:
        self.static = dict(static)
        self.toolsets = tuple(toolsets)
        self._warned: set[tuple[str, str]] = set()

    def _merged(self) -> dict[str, Tool]:
        if not self.toolsets:
            return self.static
        merged = dict(self.static)
        for toolset in self.toolsets:
            for found in toolset.tools():
                if found.name in merged:
                    if (toolset.name, found.name) in self._warned:
                        continue
                    self._warned.add((toolset.name, found.name))
                    logger.warning(
                        "toolset %r: tool %r left out: the name is taken by %r",
                        toolset.name,
                        found.name,
                        merged[found.name],
                    )
                    continue
                merged[found.name] = found
        return merged

    def __getitem__(self, name: str) -> Tool:
        return self._merged()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def __bool__(self) -> bool:
        """True when there are plain tools or toolsets (a toolset may list none yet)."""
        return bool(self.static) or bool(self.toolsets)

    def union(self, other: ToolIndex) -> ToolIndex:
        """Both indexes in one; ``other``'s plain tools win a shared name."""
        toolsets = [*self.toolsets, *(t for t in other.toolsets if t not in self.toolsets)]
        return ToolIndex({**self.static, **other.static}, toolsets)

    async def aprepare(self) -> None:
        """Let every toolset connect or list again (concurrently); never raises for them."""
        if not self.toolsets:
            return
        results = await asyncio.gather(
            *(toolset.aprepare() for toolset in self.toolsets), return_exceptions=True
        )
        for toolset, result in zip(self.toolsets, results, strict=True):
            if isinstance(result, Exception):
                logger.error("toolset %r could not prepare: %s", toolset.name, result)
            elif isinstance(result, BaseException):
                raise result  # cancellation and exits go on up


def index_tools(
    tools: Sequence[Callable[..., Any] | Tool | Toolset],
    wrap: Callable[[Callable[..., Any]], Tool] = Tool,
) -> ToolIndex:
    """Index plain tools by name (wrapping functions) beside the toolsets given.

    Two plain tools of one name, or one toolset given twice, are an error.
    """
    static: dict[str, Tool] = {}
    toolsets: list[Toolset] = []
    for item in tools:
        if isinstance(item, Toolset):
            if item in toolsets:
                raise ToolError(f"toolset {item.name!r} is given twice")
            toolsets.append(item)
            continue
        wrapped = item if isinstance(item, Tool) else wrap(item)
        if wrapped.name in static:
            raise ToolError(f"two tools are named {wrapped.name!r}")
        static[wrapped.name] = wrapped
    return ToolIndex(static, toolsets)
