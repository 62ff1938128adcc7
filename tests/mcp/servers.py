"""MCP servers written with the official SDK, for the client's fault tests.

Run as ``python servers.py KIND`` (stdio), ``python servers.py KIND --http PORT``
(streamable HTTP at ``/mcp``) or ``python servers.py KIND --sse PORT`` (HTTP+SSE
at ``/sse``). Kinds: ``tools`` (echo, add, an image, a growing list, a request
header), ``hung`` (answers the listing, never a call), ``crash`` (exits on a
call), ``huge`` (a result of 5 million characters)."""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, TextContent

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8ffff3f0005fe02fea35581e40000000049454e44ae426082"
    )
).decode()


def build(kind: str) -> MCPServer:
    server = MCPServer(f"tenxgraph-test-{kind}")

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text."""
        return text

    {"tools": _tools, "hung": _hung, "crash": _crash, "huge": _huge}[kind](server)
    return server


def _tools(server: MCPServer) -> None:
    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def picture() -> list[TextContent | ImageContent]:
        """A one-pixel picture."""
        return [
            TextContent(type="text", text="a pixel:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
        ]

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise ValueError("this tool always fails")

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add a tool named 'extra' and tell the client."""

        @server.tool()
        def extra() -> str:
            """Added later."""
            return "extra here"

        await ctx.notify_tools_changed()  # to 2026-07-28 clients' change subscriptions
        if ctx.protocol_version and ctx.protocol_version < "2026":
            await ctx.session.send_tool_list_changed()  # handshake-era clients
        return "grown"

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP header of this request ('' on stdio)."""
        return (ctx.headers or {}).get(name, "")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await asyncio.sleep(seconds)
        return "slept"


def _hung(server: MCPServer) -> None:
    @server.tool()
    async def wait() -> str:
        """Never answers."""
        await asyncio.sleep(3600)
        return "never"


def _crash(server: MCPServer) -> None:
    @server.tool()
    def die() -> str:
        """Ends the server process."""
        os._exit(3)


def _huge(server: MCPServer) -> None:
    @server.tool()
    def flood() -> str:
        """Five million characters."""
        return "x" * 5_000_000


if __name__ == "__main__":
    kind = sys.argv[1]
    server = build(kind)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    elif "--sse" in sys.argv:
        port = int(sys.argv[sys.argv.index("--sse") + 1])
        server.run("sse", host="127.0.0.1", port=port)
    else:
        server.run("stdio")
