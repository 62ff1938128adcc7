"""MCP in and out: an MCP server's tools in a graph, and a graph as an MCP server's tool.

``MCPTools`` (the client side) makes the tools of an MCP server, over stdio,
streamable HTTP or SSE, ordinary tenxgraph tools, and reads its resources and
prompts (``MCPResource``, ``MCPPrompt``...) as content blocks and messages.
``graph_server`` (the server side) exposes a compiled graph as one MCP tool,
which ``tenxgraph mcp`` serves over stdio and ``tenxgraph serve`` at ``/mcp``. Both need the extra
``mcp`` (the official SDK); see docs/mcp.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "Answer",
    "MCPPrompt",
    "MCPPromptArgument",
    "MCPResource",
    "MCPResourceTemplate",
    "MCPServerError",
    "MCPTool",
    "MCPTools",
    "graph_server",
]

if TYPE_CHECKING:
    from tenxgraph.mcp._catalog import (
        MCPPrompt,
        MCPPromptArgument,
        MCPResource,
        MCPResourceTemplate,
    )
    from tenxgraph.mcp._client import MCPServerError, MCPTools
    from tenxgraph.mcp._server import Answer, graph_server
    from tenxgraph.mcp._tool import MCPTool
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.mcp._catalog": (
                "MCPPrompt",
                "MCPPromptArgument",
                "MCPResource",
                "MCPResourceTemplate",
            ),
            "tenxgraph.mcp._client": ("MCPServerError", "MCPTools"),
            "tenxgraph.mcp._server": ("Answer", "graph_server"),
            "tenxgraph.mcp._tool": ("MCPTool",),
        },
    )
