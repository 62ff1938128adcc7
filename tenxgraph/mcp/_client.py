"""``MCPTools``: the tools of one MCP server (stdio, streamable HTTP or SSE) as a tenxgraph toolset.

Decisions:

- **One session per event loop, owned by one task.** The SDK's client lives
  in async context managers that must be left by the task that entered
  them, and its streams belong to one loop. So each loop that uses the
  toolset (a ``tenxgraph serve`` worker's, the private loop of sync
  ``invoke``) gets its own session, opened on first use by a holder task
  that enters the client and waits to be told to leave. ``aclose`` (or
  leaving ``async with``) closes the session of the loop it runs on.
- **Failures become results, never hangs.** Connecting waits at most
  ``connect_timeout`` seconds and a call at most ``timeout``; a server that
  cannot be reached, exits, or answers too late gives the model a failed
  tool result saying so, and the log a line naming the server. A broken
  session is dropped and opened again on the next use, at most once per
  ``retry_after`` seconds; meanwhile the model still sees the tools last
  listed, and their calls fail with the reason.
- **The list follows the server.** A ``tools/list_changed`` notification
  marks the list stale; the next model call or tool step lists again
  (``aprepare``).
- **Cancellation goes through.** A run stopped, or a call timed out, cancels
  the waiting call, and the SDK tells the server.
- **One path for every request.** Tool calls, resource reads and prompt
  gets all go through ``_request``, so they share the session, the
  timeout, the reopening of a broken session and errors that name the
  server and what was asked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from tenxgraph.core.graph import Toolset, client_span
from tenxgraph.errors import ConfigError, MissingExtraError, ToolError
from tenxgraph.mcp._catalog import prompt_of, resource_of, template_of
from tenxgraph.mcp._content import prompt_messages, resource_blocks, result_output, result_text
from tenxgraph.mcp._tool import MCPTool, tool_name

if TYPE_CHECKING:
    from mcp import Client

    from tenxgraph.core.state import ContentBlock, Message
    from tenxgraph.mcp._catalog import MCPPrompt, MCPResource, MCPResourceTemplate

__all__ = ["MCPServerError", "MCPTools"]

Transport = Literal["stdio", "http", "sse"]
"""How an MCP server is reached: a child process, streamable HTTP, or the older HTTP+SSE."""

logger = logging.getLogger("tenxgraph.mcp")

_T = TypeVar("_T")


class MCPServerError(ToolError):
    """An MCP server could not be reached, broke off or answered too late, or refused the request.

    A refusal is a tool that failed, a resource or prompt the server does not
    have, or its own error answer; the message names the server and what was
    asked.
    """


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise MissingExtraError("mcp", "mcp") from None
    return mcp


class MCPTools(Toolset):
    """The tools of one MCP server, usable wherever tools go (``create_agent(model, [tools])``).

    Make one with ``MCPTools.stdio(command, *args)`` (the server runs as a
    child process), ``MCPTools.http(url, headers=...)`` (streamable HTTP) or
    ``MCPTools.sse(url, headers=...)`` (the HTTP+SSE transport of servers
    written before streamable HTTP).
    It connects on first use; ``async with`` (or ``aclose``) bounds the
    session explicitly, and ``tenxgraph serve`` opens and closes it with
    each worker. The server's resources and prompts are the application's
    to read (``read_resource``, ``get_prompt``); only its tools go to the
    model.
    """

    def __init__(
        self,
        target: str | Sequence[str],
        *,
        name: str | None = None,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        prefix: str = "",
        include: Sequence[str] | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        retry_after: float = 5.0,
        max_output_chars: int = 100_000,
        protocol: str = "auto",
        transport: Transport | None = None,
    ) -> None:
        """``target`` is a URL (streamable HTTP, or SSE) or a command line (stdio).

        ``headers`` go with every HTTP request (an API key); ``env`` and
        ``cwd`` are the child process's. ``prefix`` is put before every tool
        name (two servers with a tool of the same name); ``include`` keeps
        only the tools named (their MCP names). ``timeout`` bounds each call,
        ``connect_timeout`` each connect or listing (seconds); after a
        failure, the next attempt to connect waits ``retry_after`` seconds.
        ``protocol`` is the SDK's ``mode``: ``"auto"`` (ask the server, fall
        back to the initialize handshake) or ``"legacy"`` (the handshake only,
        for a server the probe confuses). ``transport`` is ``"http"`` or
        ``"sse"`` for a URL (``"http"`` unless said), ``"stdio"`` for a
        command line.
        """
        is_url = isinstance(target, str)
        transport = transport or ("http" if is_url else "stdio")
        if transport not in ("stdio", "http", "sse"):
            raise ConfigError(f"MCP transport must be 'stdio', 'http' or 'sse', got {transport!r}")
        if is_url != (transport != "stdio"):
            wants = "a command line" if transport == "stdio" else "a URL"
            raise ConfigError(f"the {transport} MCP transport takes {wants}, got {target!r}")
        if is_url and not str(target).startswith(("http://", "https://")):
            raise ConfigError(f"MCP server URL must be http(s)://..., got {target!r}")
        if not is_url and (not target or not all(isinstance(p, str) for p in target)):
            raise ConfigError("an MCP stdio server is a command line: a non-empty list of strings")
        for option, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if not value > 0:
                raise ConfigError(f"MCPTools {option} must be positive, got {value!r}")
        if headers and not is_url:
            raise ConfigError("headers= is for an HTTP MCP server; a stdio server takes env=")
        if (env or cwd) and is_url:
            raise ConfigError("env= and cwd= are for a stdio MCP server (a command line)")
        self.target: str | tuple[str, ...] = target if isinstance(target, str) else tuple(target)
        self.transport: Transport = transport
        self.name = name or _default_name(self.target)
        self.headers = dict(headers or {})
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.prefix = prefix
        self.include = frozenset(include) if include is not None else None
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.retry_after = float(retry_after)
        self.max_output_chars = max_output_chars
        self.protocol = protocol
        self._tools: list[MCPTool] = []
        self._sessions: dict[asyncio.AbstractEventLoop, _Session] = {}

    @classmethod
    def stdio(cls, command: str, *args: str, **options: Any) -> MCPTools:
        """A server run as a child process, spoken to over its stdin and stdout."""
        return cls([command, *args], **options)

    @classmethod
    def http(cls, url: str, **options: Any) -> MCPTools:
        """A server at a streamable HTTP endpoint (``.../mcp``)."""
        return cls(url, transport="http", **options)

    @classmethod
    def sse(cls, url: str, **options: Any) -> MCPTools:
        """A server at an HTTP+SSE endpoint (``.../sse``): the transport before streamable HTTP.

        The client holds an event stream open (GET) for the server's messages
        and posts its own to the address the server names on that stream.
        """
        return cls(url, transport="sse", **options)

    def tools(self) -> list[MCPTool]:
        """The server's tools as last listed (none before the first connect)."""
        return list(self._tools)

    async def __aenter__(self) -> MCPTools:
        await self.aprepare()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aprepare(self) -> None:
        """Connect (or connect again) if needed, and list the tools if they changed."""
        session = await self._session()
        if session.client is not None and session.stale:
            await self._list(session)

    async def aclose(self) -> None:
        """Close this loop's session (and end the server process, for stdio)."""
        session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    async def call(self, mcp_name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``mcp_name``; what the model reads, or ``MCPServerError`` saying why not.

        The call is a ``tools/call {tool}`` client span (MCP's conventions)
        under the runtime's ``execute_tool`` span, and the trace context goes
        to the server in the request's ``params._meta``.
        """
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": mcp_name}
        with self._span("tools/call", mcp_name, attributes) as meta:
            result = await self._request(
                f"tool {mcp_name!r}",
                lambda client: client.call_tool(mcp_name, arguments, meta=meta),
            )
            if result.is_error:
                raise MCPServerError(result_text(result, self.max_output_chars))
            return result_output(result, self.max_output_chars)

    async def list_resources(self) -> list[MCPResource]:
        """The resources the server lists (those behind a URI template are not among them)."""
        listed = await self._request(
            "the resource list", lambda client: _pages(client, "resources")
        )
        return [resource_of(item) for item in listed]

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        """The server's URI templates: fill one in and read the URI with ``read_resource``."""
        listed = await self._request(
            "the resource template list",
            lambda client: _pages(client, "resource_templates"),
        )
        return [template_of(item) for item in listed]

    async def read_resource(self, uri: str) -> list[ContentBlock]:
        """The contents of resource ``uri`` as content blocks, ready for a ``Message``.

        Text comes as text blocks annotated with the resource's URI, images
        as inline image blocks, other binary contents as data blocks; text
        past ``max_output_chars`` is cut, saying so. An unknown URI is
        ``MCPServerError`` with the server's reason.
        """
        if not isinstance(uri, str) or not uri:
            raise ConfigError(f"an MCP resource URI is a non-empty string, got {uri!r}")
        with self._span("resources/read", uri, {"mcp.resource.uri": uri}) as meta:
            result = await self._request(
                f"resource {uri!r}", lambda client: client.read_resource(uri, meta=meta)
            )
        return resource_blocks(result, self.max_output_chars)

    async def list_prompts(self) -> list[MCPPrompt]:
        """The prompts the server lists, with their arguments."""
        listed = await self._request("the prompt list", lambda client: _pages(client, "prompts"))
        return [prompt_of(item) for item in listed]

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> list[Message]:
        """Prompt ``name`` filled in with ``arguments``: its messages, ready to put in state.

        The arguments are checked against the prompt's listing first (one
        more request), so a missing, unknown or non-string argument is a
        ``ConfigError`` naming it, and an unknown prompt an
        ``MCPServerError`` naming the prompts there are.
        """
        prompts = {prompt.name: prompt for prompt in await self.list_prompts()}
        prompt = prompts.get(name)
        if prompt is None:
            raise MCPServerError(
                f"MCP server {self.name!r} has no prompt {name!r}; "
                f"its prompts: {', '.join(sorted(prompts)) or 'none'}"
            )
        checked = prompt.check(arguments or {})
        with self._span("prompts/get", name, {"gen_ai.prompt.name": name}) as meta:
            result = await self._request(
                f"prompt {name!r}", lambda client: client.get_prompt(name, checked, meta=meta)
            )
        return prompt_messages(result, self.max_output_chars)

    @contextmanager
    def _span(self, method: str, target: str, attributes: dict[str, str]) -> Iterator[Any]:
        """A ``{method} {target}`` client span; yields the trace context for ``params._meta``."""
        attributes = {"mcp.method.name": method, "tenxgraph.mcp.server": self.name, **attributes}
        with client_span(f"{method} {target}", attributes) as headers:
            yield headers or None

    async def _request(self, what: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """One request on this loop's session: its answer, or ``MCPServerError`` saying why not.

        Every request to the server goes through here: the session is opened
        on first use, the answer awaited at most ``timeout`` seconds, and a
        broken connection marks the session to be opened again. ``what``
        names the request in the log and the error (``tool 'add'``).
        """
        session = await self._session()
        if session.client is None:
            raise MCPServerError(f"MCP server {self.name!r} is not connected: {session.failure}")
        try:
            async with asyncio.timeout(self.timeout):
                answer: _T = await session.run(send(session.client))
                return answer
        except TimeoutError:
            logger.warning(
                "MCP server %r: %s gave no answer in %g s; the request was cancelled",
                self.name,
                what,
                self.timeout,
            )
            raise MCPServerError(
                f"MCP server {self.name!r} did not answer within {self.timeout:g} s"
            ) from None
        except _SessionLost as lost:
            raise MCPServerError(f"MCP server {self.name!r} broke off: {lost}") from None
        except Exception as exc:  # an error answer, an unknown tool, a dropped connection
            if _is_connection_error(exc):
                session.fail(_describe(exc))  # opened again on the next use
            logger.warning("MCP server %r: %s failed: %s", self.name, what, _describe(exc))
            raise MCPServerError(f"MCP server {self.name!r}: {what}: {_describe(exc)}") from None

    async def _session(self) -> _Session:
        """The session of the running loop: kept, or opened now (it may have failed).

        The session is registered before it is opened, so concurrent callers
        (parallel branches) wait for the same one instead of opening their own.
        """
        loop = asyncio.get_running_loop()
        for gone in [other for other in self._sessions if other.is_closed()]:
            del self._sessions[gone]  # a sync bridge's finished loop: its process ended with it
        session = self._sessions.get(loop)
        if session is not None:
            await session.opened.wait()
            if session.alive() or not session.may_retry(self.retry_after):
                return session
            await session.close()
        session = _Session(self)
        self._sessions[loop] = session
        try:
            await session.open(self.connect_timeout)
            await self._list(session)
        finally:
            session.opened.set()
        return session

    async def _list(self, session: _Session) -> None:
        if session.client is None:
            return
        session.stale = False
        try:
            async with asyncio.timeout(self.connect_timeout):
                listed = await session.run(_pages(session.client, "tools"))
        except Exception as exc:
            session.stale = True
            logger.error("MCP server %r: listing its tools failed: %s", self.name, _describe(exc))
            return
        self._tools = [
            MCPTool(
                tool_name(self.prefix, tool.name),
                tool.name,
                tool.description or "",
                tool.input_schema,
                self.call,
                server=self.name,
            )
            for tool in listed
            if self.include is None or tool.name in self.include
        ]

    async def _transport(self, stack: AsyncExitStack) -> Any:
        mcp = _import_mcp()
        if isinstance(self.target, str) and self.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(
                self.target,
                headers=self.headers,
                timeout=self.connect_timeout,
                sse_read_timeout=_STREAM_IDLE_SECONDS,
            )
        if isinstance(self.target, str):
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                headers=self.headers,
                timeout=httpx2.Timeout(self.connect_timeout, read=_STREAM_IDLE_SECONDS),
            )
            await stack.enter_async_context(http)
            return streamable_http_client(self.target, http_client=http)
        command, *args = self.target
        return mcp.StdioServerParameters(command=command, args=args, env=self.env, cwd=self.cwd)

    def __repr__(self) -> str:
        return f"MCPTools({self.name!r})"


_STREAM_IDLE_SECONDS = 300.0
"""How long an HTTP server's event stream may stay silent before the session counts as broken."""


class _SessionLost(MCPServerError):
    """The session ended while a call waited (private: ``call`` turns it into MCPServerError)."""


class _Session:
    """One session with the server on one loop, held open by its own task."""

    def __init__(self, owner: MCPTools) -> None:
        self.owner = owner
        self.client: Client | None = None
        self.stale = True
        self.failure = "not connected yet"
        self.failed_at: float | None = None
        self.opened = asyncio.Event()
        """Set once the first connect and listing ended, however they ended."""
        self._ready = asyncio.Event()
        self._leave = asyncio.Event()
        self._ended = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def alive(self) -> bool:
        return self.client is not None and not self._ended.is_set()

    def may_retry(self, retry_after: float) -> bool:
        return self.failed_at is None or time.monotonic() - self.failed_at >= retry_after

    async def open(self, seconds: float) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._hold(), name=f"tenxgraph-mcp-{self.owner.name}"
        )
        try:
            async with asyncio.timeout(seconds):
                await self._ready.wait()
        except TimeoutError:
            self.fail(f"no answer to the connect within {seconds:g} s")
            await self.close()

    async def _hold(self) -> None:
        mcp = _import_mcp()
        try:
            async with AsyncExitStack() as stack:
                transport = await self.owner._transport(stack)
                client = mcp.Client(
                    transport, message_handler=self._on_message, mode=self.owner.protocol
                )
                await stack.enter_async_context(client)
                self.client = client
                logger.info("MCP server %r connected", self.owner.name)
                listener = asyncio.ensure_future(self._listen(client))
                self._ready.set()
                try:
                    await self._leave.wait()
                finally:
                    listener.cancel()
                    await asyncio.gather(listener, return_exceptions=True)
        except Exception as exc:  # the SDK raises exception groups from its task groups
            self.fail(_describe(exc))
        finally:
            self.client = None
            self._ready.set()
            self._ended.set()

    def fail(self, reason: str) -> None:
        if self.failed_at is None:
            logger.error("MCP server %r is unavailable: %s", self.owner.name, reason)
        self.failure = reason
        self.failed_at = time.monotonic()
        self.client = None

    async def _listen(self, client: Client) -> None:
        """Mark the list stale on each change the server reports (2026-07-28 servers).

        Older servers send ``notifications/tools/list_changed`` instead, which
        ``_on_message`` sees; they refuse the subscription.
        """
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _ in changes:
                    self.stale = True
        except Exception as exc:  # an older server, or the session ended
            logger.debug("MCP server %r: no change subscription: %s", self.owner.name, exc)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            logger.warning("MCP server %r: %s", self.owner.name, _describe(message))
        elif getattr(message, "method", None) == "notifications/tools/list_changed":
            self.stale = True

    async def run(self, call: Any) -> Any:
        """Await ``call``, or raise ``_SessionLost`` when the session ends first."""
        work = asyncio.ensure_future(call)
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({work, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ended.cancel()
            if not work.done():
                work.cancel()
        if work.done() and not work.cancelled():
            return work.result()
        raise _SessionLost(self.failure)

    async def close(self) -> None:
        self._leave.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            async with asyncio.timeout(self.owner.connect_timeout):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _pages(client: Client, kind: str) -> list[Any]:
    """Every item of listing ``kind`` (``tools``, ``prompts``...), following the cursor.

    A server that does not offer the kind (no capability for it) has none,
    rather than an error. At most 100 pages: a cursor that never ends cannot
    hang the listing.
    """
    capability = "resources" if kind == "resource_templates" else kind
    if getattr(client.server_capabilities, capability, None) is None:
        return []
    fetch = getattr(client, f"list_{kind}")
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, kind))
        cursor = page.next_cursor
        if cursor is None:
            break
    return items


def _is_connection_error(exc: BaseException) -> bool:
    """True unless the server itself answered with an error (then the session is fine)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types.jsonrpc import CONNECTION_CLOSED

    return not isinstance(exc, MCPError) or exc.code == CONNECTION_CLOSED


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception (or exception group).

    An error the server answered with is its message alone: the server
    wrote it for the reader.
    """
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if isinstance(exc, MCPError):
        return text or f"error {exc.code}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _default_name(target: str | tuple[str, ...]) -> str:
    if isinstance(target, str):
        return target.split("://", 1)[-1].split("/", 1)[0]
    return " ".join(target)[:60]
