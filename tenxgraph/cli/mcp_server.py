"""``tenxgraph mcp module:graph``: a graph as an MCP tool, served over stdio to an MCP host.

An MCP host (a desktop assistant, an IDE, the MCP Inspector) starts this
command and speaks MCP on its stdin and stdout, so nothing else may be
printed there: log lines go to stderr. Imports wait for the command itself,
so ``tenxgraph --help`` stays light. The tool is described in
``tenxgraph.mcp._server`` (one thread per connection unless the host passes
``thread_id``). Threads are kept where ``--db`` says, as for ``tenxgraph
run``; a graph compiled with its own checkpointer keeps its own.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_mcp_command", "run_mcp"]


def add_mcp_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    location: Any,
) -> None:
    """``tenxgraph mcp``."""
    mcp = commands.add_parser(
        "mcp", help="serve a graph as an MCP tool over stdio (for MCP hosts; needs the mcp extra)"
    )
    mcp.add_argument(
        "target", help="module:graph naming a StateGraph or CompiledGraph (as `tenxgraph run`)"
    )
    mcp.add_argument("--name", default="tenxgraph", help="the MCP server's name (tenxgraph)")
    mcp.add_argument("--tool", default="ask", help="the tool's name (ask)")
    mcp.add_argument("--description", help="the tool's description, as the host's model reads it")
    location(mcp)


async def run_mcp(args: argparse.Namespace) -> int:
    """Serve until the host closes stdin."""
    from tenxgraph.cli.errors import CliError
    from tenxgraph.cli.locations import make_checkpointer
    from tenxgraph.cli.run import load_graph
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.mcp import graph_server

    target = load_graph(args.target)
    if isinstance(target, CompiledGraph) and target.checkpointer is not None:
        graph = target
    else:
        checkpointer = make_checkpointer(args.db)
        graph = (
            target.recompile(checkpointer=checkpointer)
            if isinstance(target, CompiledGraph)
            else target.compile(checkpointer)
        )
    user = args.user
    options: dict[str, Any] = {"name": args.name, "tool": args.tool}
    if args.description:
        options["description"] = args.description
    if user:
        options["user_of"] = lambda _ctx: user
    try:
        server = graph_server(graph, **options)
        await server.run_stdio_async()
    except ImportError as exc:
        raise CliError(str(exc)) from None
    finally:
        if graph.checkpointer is not None and graph is not target:
            await graph.checkpointer.aclose()
    return 0
