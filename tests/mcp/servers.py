"""MCP servers written with the official SDK, for the client's fault tests.

Run as ``python servers.py KIND`` (stdio), ``python servers.py KIND --http PORT``
(streamable HTTP at ``/mcp``) or ``python servers.py KIND --sse PORT`` (HTTP+SSE
at ``/sse``). Kinds: ``tools`` (echo, add, an image, a growing list, a request
header), ``hung`` (answers the listing, never a call or a read), ``crash``
(exits on a call), ``huge`` (a result of 5 million characters), ``catalog``
(resources: text, an image, bytes, a long text, a template; prompts: one with
arguments, one of two turns), ``bare`` (the SDK's low level: tools alone, no
resources or prompts)."""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
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

    kinds = {"tools": _tools, "hung": _hung, "crash": _crash, "huge": _huge, "catalog": _catalog}
    kinds[kind](server)
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


def _catalog(server: MCPServer) -> None:
    @server.resource("notes://today", mime_type="text/plain")
    def today() -> str:
        """Today's notes."""
        return "Buy milk. Call Ana."

    @server.resource("notes://pixel", mime_type="image/png")
    def pixel() -> bytes:
        """A one-pixel picture."""
        return base64.b64decode(PNG)

    @server.resource("notes://archive", mime_type="application/zip")
    def archive() -> bytes:
        """Some bytes."""
        return b"PK\x05\x06" + bytes(18)

    @server.resource("notes://long", mime_type="text/plain")
    def long() -> str:
        """A hundred thousand characters."""
        return "y" * 100_000

    @server.resource("notes://day/{day}", mime_type="text/plain")
    def day(day: str) -> str:
        """The notes of a day."""
        return f"notes of {day}"

    @server.prompt()
    def summarize(topic: str, style: str = "short") -> str:
        """Ask for a summary of a topic."""
        return f"Summarize {topic}, {style}."

    @server.prompt()
    def greeting() -> list[Message]:
        """A two-turn opening."""
        return [UserMessage("Hello?"), AssistantMessage("Hello! What shall we look at?")]


def _hung(server: MCPServer) -> None:
    @server.tool()
    async def wait() -> str:
        """Never answers."""
        await asyncio.sleep(3600)
        return "never"

    @server.resource("hung://forever")
    async def forever() -> str:
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


def run_bare() -> None:
    """A server of the SDK's low level with tools alone: no resources, prompts, templates."""
    import anyio
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.types import ListToolsResult

    async def list_tools(ctx: object, params: object) -> ListToolsResult:
        return ListToolsResult(tools=[])

    bare: Server[object] = Server("tenxgraph-test-bare", on_list_tools=list_tools)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await bare.run(read, write, bare.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "bare":
        run_bare()
        sys.exit(0)
    server = build(kind)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    elif "--sse" in sys.argv:
        port = int(sys.argv[sys.argv.index("--sse") + 1])
        server.run("sse", host="127.0.0.1", port=port)
    else:
        server.run("stdio")
