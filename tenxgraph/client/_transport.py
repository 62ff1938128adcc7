"""The one place the client speaks HTTP: request building, the API key, error mapping.

Every call of the async and sync clients goes through ``Transport``, so a
request is built, sent and checked in one way. httpx is imported here and
only here (through ``_httpx``), when the first client is made: ``import
tenxgraph`` never loads it.

An ``httpx.AsyncClient`` belongs to the event loop it first ran on. The
transport keeps one (a pool of kept-alive connections) for the loop that
made it; a call from another loop gets a short-lived client closed at the end
of that call, so no connection ever crosses loops. A loop that lives for one
call only (a ``SyncClient`` used inside a running loop runs each call in a
helper thread whose loop is closed after it) is marked with ``transient``,
so it never becomes the pool's loop.
"""

from __future__ import annotations

import asyncio
import json
import sys
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from tenxgraph.errors import (
    APIConflictError,
    APIConnectionError,
    APINotFoundError,
    APIStatusError,
    APIUnauthorizedError,
    ClientError,
    MissingExtraError,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["Transport", "jsonable", "raise_for_status"]

_STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    401: APIUnauthorizedError,
    403: APIUnauthorizedError,
    404: APINotFoundError,
    409: APIConflictError,
}

API_KEY_HEADER = "X-Api-Key"
"""The header the API key travels in (the one the LangGraph SDK sends too)."""
FORMAT_HEADERS = {"X-Message-Format": "tenxgraph"}
"""Asks the server for tenxgraph's message JSON (its LangGraph routes default to LangChain's)."""


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise MissingExtraError("httpx", "client") from exc
    return httpx


class Transport:
    """Sends requests to one server with one API key; maps failures to ``ClientError``s."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        given = dict(headers or {})
        chosen = any(name.lower() == "x-message-format" for name in given)
        self._headers = given if chosen else {**FORMAT_HEADERS, **given}
        if api_key is not None:
            self._headers[API_KEY_HEADER] = api_key
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transient: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()

    def _new_client(self) -> httpx.AsyncClient:
        lib = _httpx()
        # Reads in a stream wait as long as a run may stay silent (a slow tool): no read timeout.
        timeout = lib.Timeout(self.timeout, read=None)
        client: httpx.AsyncClient = lib.AsyncClient(
            base_url=self.url, headers=self._headers, timeout=timeout
        )
        return client

    @asynccontextmanager
    async def session(self) -> AsyncIterator[httpx.AsyncClient]:
        """The pooled client on its own loop, else a client for this call only."""
        loop = asyncio.get_running_loop()
        if loop not in self._transient and (self._client is None or self._client.is_closed):
            self._client, self._loop = self._new_client(), loop
        if self._loop is loop and self._client is not None:
            yield self._client
            return
        async with self._new_client() as client:
            yield client

    def transient(self) -> None:
        """Calls from the running loop get their own client: the loop is closed after them."""
        self._transient.add(asyncio.get_running_loop())

    async def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        until_done: bool = False,
    ) -> Any:
        """Send one request and return its decoded JSON body (None when empty).

        The answer is awaited ``timeout`` seconds, except with ``until_done``
        (``wait``, ``join``: the answer comes when the run ends).
        """
        response = await self.send(
            method, path, json_body=json_body, params=params, until_done=until_done
        )
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ClientError(
                f"{method} {self.url}{path} answered {response.status_code} with a body "
                f"that is not JSON: {response.text[:200]!r}"
            ) from None

    async def send(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        until_done: bool = False,
    ) -> httpx.Response:
        """Send one request (JSON, or raw ``content``); the response, read whole and checked."""
        lib = _httpx()
        timeout = lib.Timeout(self.timeout, read=None) if until_done else self.timeout
        body: dict[str, Any] = {"content": content} if content is not None else {}
        if json_body is not None:
            body["json"] = jsonable(json_body)
        async with self.session() as client:
            try:
                response = await client.request(
                    method,
                    path,
                    params=_clean(params),
                    headers=_traced(headers),
                    timeout=timeout,
                    **body,
                )
            except lib.TransportError as exc:
                raise _unreachable(self.url, method, path, exc) from exc
            await raise_for_status(response)
            return response

    @asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[httpx.Response]:
        """Open a Server-Sent Events response; an error status raises before any event."""
        lib = _httpx()
        sse_headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        sse_headers.update(headers or {})
        async with self.session() as client:
            try:
                async with client.stream(
                    method, path, json=jsonable(json_body), headers=_traced(sse_headers)
                ) as response:
                    await raise_for_status(response)
                    yield response
            except lib.TransportError as exc:
                raise _unreachable(self.url, method, path, exc) from exc

    async def aclose(self) -> None:
        """Close the pooled connections (on the loop that opened them)."""
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = None


async def raise_for_status(response: httpx.Response) -> None:
    """Raise the ``APIStatusError`` for a 4xx/5xx response, with the server's ``detail``."""
    if response.status_code < 400:
        return
    await response.aread()
    cls = _STATUS_ERRORS.get(response.status_code, APIStatusError)
    request = response.request
    raise cls(
        response.status_code,
        _detail(response.text) or response.reason_phrase,
        method=request.method,
        path=request.url.path,
    )


def _traced(headers: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """``headers`` with the current OpenTelemetry span's W3C ``traceparent``, when there is one.

    The server continues that trace (docs/observability.md). OpenTelemetry is
    never imported here: a process that has not imported it has no span to send.
    """
    if sys.modules.get("opentelemetry.trace") is None:
        return headers
    from opentelemetry import propagate, trace

    if not trace.get_current_span().get_span_context().is_valid:
        return headers
    carrier = dict(headers or {})
    propagate.inject(carrier)
    return carrier


def _detail(body: str) -> str:
    """The server's explanation: the JSON body's ``detail`` (FastAPI's field), else the text."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:2000]
    detail = data.get("detail", data) if isinstance(data, dict) else data
    if isinstance(detail, list):  # FastAPI's validation errors: one line per problem
        return "; ".join(_validation_line(item) for item in detail)
    return detail if isinstance(detail, str) else json.dumps(detail)


def _validation_line(item: Any) -> str:
    if isinstance(item, dict) and "msg" in item:
        where = ".".join(str(part) for part in item.get("loc", ()))
        return f"{where}: {item['msg']}" if where else str(item["msg"])
    return json.dumps(item)


def _unreachable(url: str, method: str, path: str, exc: Exception) -> APIConnectionError:
    reason = str(exc) or type(exc).__name__
    return APIConnectionError(f"{method} {url}{path} failed: {reason}")


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: pydantic models (a ``Message``) dumped, tuples as lists."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    return value


def _clean(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if params is None else {k: v for k, v in params.items() if v is not None}
