"""A compiled graph as one MCP tool: ``graph_server(graph)`` builds the SDK's ``MCPServer``.

The tool (``ask`` unless named otherwise) takes ``message`` and an optional
``thread_id``, runs one turn of the graph and answers with the last
assistant message's text and the thread it ran on (structured content
``{"answer", "thread_id"}``, and ``"interrupt"`` when the graph paused).

Decisions:

- **Which thread.** An explicit ``thread_id`` argument wins, so a host can
  keep several conversations and come back to one. Without it the MCP
  session is the conversation: a streamable HTTP session (its
  ``mcp-session-id``) or the stdio connection (one per server process) is
  one thread, so consecutive calls of one host continue it. A call without
  either (a stateless HTTP request) starts a new thread. The answer always
  names the thread, so the host can pass it back.
- **Whose thread.** ``user_of(context)`` says which user (tenant) a call
  runs as; ``tenxgraph serve`` gives the API key's user, so one key's
  threads are invisible to another's, as on its other routes. Threads the
  MCP tool makes are ordinary threads, readable over the HTTP API.
- **A question is answered by the next message.** When the graph pauses at
  ``interrupt(value)``, the answer carries ``value`` as ``interrupt``, and
  the next call on that thread resumes the graph with its ``message`` as
  the answer (a host has only messages to send). A pause before or after a
  node (``interrupt_before``/``interrupt_after``) asks nothing: ``interrupt``
  says where the run stopped and which tool calls wait, and the next call
  continues the turn, its ``message`` the go-ahead (not added to the
  thread). Anything else the thread refuses (a failed turn...) comes back
  as the tool's error text.
- **A graph without a checkpointer** has no threads: each call is a fresh run.
- **The graph's own toolsets** (MCP servers it uses) are prepared and closed
  with the server (its lifespan).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from tenxgraph.core.state.ids import DEFAULT_USER
from tenxgraph.errors import TenxGraphError
from tenxgraph.mcp._client import _import_mcp

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context, MCPServer

    from tenxgraph.core.graph import CompiledGraph

__all__ = ["Answer", "graph_server"]

DEFAULT_DESCRIPTION = (
    "Send a message to the agent and get its answer. Pass back the thread_id of an answer to "
    "continue that conversation; without one, this connection's conversation is continued. "
    "An answer with an interrupt means the agent waits: the next message on its thread answers "
    "its question, or, when it paused before or after a step, lets it go on."
)
_PAUSED_AT_A_NODE = ("before", "after")
"""The ``interrupt_kind`` of ``interrupt_before``/``interrupt_after`` pauses."""
_RESUMED = ("inside", *_PAUSED_AT_A_NODE)
"""The pauses the next message resumes (a pause for remote tool results is not one)."""


class Answer(BaseModel):
    """What the graph's MCP tool answers."""

    answer: str = Field(description="The text of the agent's last message.")
    thread_id: str | None = Field(description="The thread of this turn; pass it back to continue.")
    interrupt: Any = Field(
        default=None,
        description=(
            "Set when the graph paused: the question it asks, or for a pause at a step "
            '{"paused": "before" or "after", "node": ..., "tool_calls": [...]}.'
        ),
    )


def graph_server(
    graph: CompiledGraph[Any],
    *,
    name: str = "tenxgraph",
    tool: str = "ask",
    description: str = DEFAULT_DESCRIPTION,
    user_of: Callable[[Context], str | None] | None = None,
    manage_toolsets: bool = True,
) -> MCPServer:
    """An MCP server with one tool, ``tool``, that runs a turn of ``graph``.

    ``user_of(context)`` names the user a call runs as (default: the
    ``default`` user). ``manage_toolsets=False`` leaves the graph's toolsets
    to whatever hosts the server (``tenxgraph serve`` opens and closes them).
    """
    _import_mcp()
    from mcp.server.mcpserver import Context, MCPServer

    connection = uuid.uuid4().hex  # the stdio connection's thread: one per server process

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[dict[str, Any]]:
        toolsets = graph.toolsets() if manage_toolsets else []
        for toolset in toolsets:
            await toolset.aprepare()
        try:
            yield {}
        finally:
            for toolset in toolsets:
                await toolset.aclose()

    with _host_logging_kept():
        server = MCPServer(name, lifespan=lifespan)

    async def ask(message: str, ctx: Context, thread_id: str | None = None) -> Answer:
        user = (user_of(ctx) if user_of is not None else None) or DEFAULT_USER
        thread = thread_id or _session_thread(ctx, connection)
        config: dict[str, Any] = {"user_id": user}
        if graph.checkpointer is not None:
            config["thread_id"] = thread
        try:
            result = await graph.ainvoke(await _turn(graph, message, config), config)
        except TenxGraphError as exc:  # the host's model reads why (the SDK hides other errors)
            raise ToolError(str(exc)) from None
        return Answer(
            answer=_last_text(result),
            thread_id=thread if graph.checkpointer is not None else None,
            interrupt=_waiting(result),
        )

    from mcp.server.mcpserver.exceptions import ToolError

    # the SDK reads the schema from the annotations, which are text in this module
    ask.__annotations__ = {
        "message": str,
        "ctx": Context,
        "thread_id": str | None,
        "return": Answer,
    }
    server.add_tool(ask, name=tool, description=description)
    return server


async def _turn(graph: CompiledGraph[Any], message: str, config: dict[str, Any]) -> Any:
    """The input of this turn: the message, or what resumes the thread's pause.

    That is the answer to the question of ``interrupt(value)``, or for a
    pause before or after a node the go-ahead (the runtime ignores its value).
    """
    if "thread_id" not in config:
        return {"messages": [("user", message)]}
    state = await graph.aget_state(config)
    meta = state.execution_meta if state is not None else None
    if meta is not None and meta.status == "interrupted" and meta.interrupt_kind in _RESUMED:
        return {"resume": message}  # the answer to its question, or the go-ahead
    return {"messages": [("user", message)]}


def _last_text(result: dict[str, Any]) -> str:
    """The answer's text: the last message of this run, else of the thread.

    A run that adds no message (one resumed after a pause that followed the
    last reply) still answers with where the conversation stands, not "".
    """
    messages = result.get("messages") or getattr(result["state"], "context", None) or []
    return messages[-1].text() if messages else ""


def _waiting(result: dict[str, Any]) -> Any:
    """What the answer's ``interrupt`` shows: the question asked, or where the run paused.

    A pause at ``interrupt(value)`` shows ``value``. A pause before or after
    a node has no value, so it shows the step and the tool calls waiting to
    run (those of the last message), which is what a host asks its user to
    let go on.
    """
    paused = result.get("interrupt")
    if paused is None:
        return None
    meta = result["state"].execution_meta
    if meta.interrupt_kind not in _PAUSED_AT_A_NODE:
        return paused.value
    node = meta.next_node if meta.interrupt_kind == "before" else meta.current_node
    shown: dict[str, Any] = {"paused": meta.interrupt_kind, "node": node}
    messages = result.get("messages") or []
    calls = messages[-1].tool_calls() if messages else []
    if calls:
        shown["tool_calls"] = [{"name": call.name, "args": call.args} for call in calls]
    return shown


@contextmanager
def _host_logging_kept() -> Iterator[None]:
    """Keep ``MCPServer()`` from configuring the process's logging.

    The SDK's server calls ``logging.basicConfig`` (a handler on the root
    logger, at INFO), which would change the log output of the whole
    application serving the graph. ``basicConfig`` does nothing while the
    root logger has a handler, so one is there for the moment of the call.
    """
    root = logging.getLogger()
    guard = logging.NullHandler()
    root.addHandler(guard)
    try:
        yield
    finally:
        root.removeHandler(guard)


def _session_thread(ctx: Context, connection: str) -> str:
    """The thread of the MCP session: its HTTP session id, or this stdio connection's."""
    headers = ctx.headers
    if headers is None:  # stdio: the connection is the session
        return f"mcp-{connection}"
    session = headers.get("mcp-session-id")
    return f"mcp-{session}" if session else f"mcp-{uuid.uuid4().hex}"
