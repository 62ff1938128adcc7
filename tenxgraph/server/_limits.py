"""What a request body may be: its bytes, and as JSON, its text and its counts.

``BodyLimit`` (a pure ASGI middleware) counts the bytes while the body
streams in: a ``Content-Length`` over the limit is refused at once; a
chunked body is refused as soon as it passes the limit, so a client cannot
make the server buffer more than the limit. Either way the answer is 413
with ``{"detail": ...}``.

``CheckedJsonRoute`` (the route class of every router with JSON bodies)
parses a JSON body strictly and checks its counts (``JsonLimits``) before
the route validates it: bad text is 422, a count over its limit 413, each
naming where in the body and, for a limit, the option that raises it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request

from tenxgraph.core.state.json_policy import lone_surrogate, parse_json
from tenxgraph.errors import ConfigError

if TYPE_CHECKING:
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COUNT_LIMITS", "BodyLimit", "CheckedJsonRoute", "JsonLimits", "parse_json_body"]


class _TooLarge(HTTPException):
    """Raised from ``receive`` when the body passes the limit (routes answer it as 413)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, _detail(max_bytes))


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting its body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if started:
                raise
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": _detail(self.max_bytes)}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _detail(max_bytes: int) -> str:
    return f"request body too large: the limit is {max_bytes} bytes"


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


# --- JSON bodies: strict, and bounded in counts ---------------------------------------------

MAX_MESSAGES = 10_000
MAX_CONTENT_BLOCKS = 1_000
MAX_KEYS = 10_000
MAX_DEPTH = 100

COUNT_LIMITS = {
    "max_messages": ("messages in one request", "MAX_MESSAGES"),
    "max_content_blocks": ("content blocks in one message", "MAX_CONTENT_BLOCKS"),
    "max_keys": ("keys in one JSON object", "MAX_KEYS"),
    "max_depth": ("levels of JSON nesting", "MAX_DEPTH"),
}
"""Each count limit: what it counts, and the ``TENXGRAPH_SERVE_*`` variable that sets it."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
r"""A ``\ud800``-``\udfff`` escape in the raw body: only then are strings checked one by one."""


@dataclass(frozen=True, slots=True)
class JsonLimits:
    """Counts a JSON request body may not pass, checked before any route validates it.

    The byte limit bounds a body's size, not its cost: 2.6 MB of 200,000
    tiny messages is cheap to send and costly to validate, store and
    answer. Each count is checked on the parsed body in one pass that stops
    at the first count over its limit, before pydantic sees the body. The
    defaults are far above what a real app sends.
    """

    max_messages: int = MAX_MESSAGES
    """Messages in one request: the items of every list under a ``messages`` key, summed."""
    max_content_blocks: int = MAX_CONTENT_BLOCKS
    """Content blocks in one message: the items of a listed message's ``content`` list."""
    max_keys: int = MAX_KEYS
    """Keys in any one JSON object of the body."""
    max_depth: int = MAX_DEPTH
    """Levels of nesting of objects and arrays (``{"a": [1]}`` has two)."""

    def __post_init__(self) -> None:
        for name in COUNT_LIMITS:
            value = getattr(self, name)
            if type(value) is not int or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")

    def refuse(self, name: str, found: int | str, where: str) -> NoReturn:
        """Raise the 413 of a count over its limit, naming the option that raises it."""
        what, variable = COUNT_LIMITS[name]
        raise HTTPException(
            413,
            f"{where}: {found} {what}, over the limit of {getattr(self, name)} "
            f"(raise it with create_app({name}=...) or TENXGRAPH_SERVE_{variable})",
        )


def parse_json_body(body: bytes, limits: JsonLimits) -> Any:
    r"""The body as JSON, refused (``HTTPException``) unless it is JSON text a route can take.

    422: not UTF-8, ``NaN``/``Infinity`` (Python's json reads them, but
    they are not JSON, and an answer echoing them would not be either),
    lone surrogates (``"\ud800"`` escapes: text no store can encode).
    413: a count over ``limits``. Malformed JSON raises ``json.JSONDecodeError``,
    which FastAPI answers with its own 422.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(
            422,
            f"body: not valid UTF-8 (byte 0x{body[exc.start]:02x} at position {exc.start}); "
            "send the JSON encoded as UTF-8",
        ) from None
    try:
        value = parse_json(text)
    except json.JSONDecodeError:
        raise  # malformed: FastAPI's own 422
    except RecursionError:
        limits.refuse("max_depth", "too many", "body")  # deeper than json itself can go
    except ValueError as exc:  # the words NaN and Infinity (json_policy.parse_json)
        raise HTTPException(
            422, f"body: {exc} (JSON has no NaN or Infinity; send null or text)"
        ) from None
    _Checker(limits, _SURROGATE_ESCAPE.search(body) is not None).check(value)
    return value


_Path = tuple[Any, Any] | None
"""Where a value is, as a link to its parent's path: rendered only for an error."""


def _where(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        if type(key) is int:
            parts.append(f"[{key}]")
        else:  # a key may hold the very surrogate refused: the answer must still encode
            parts.append("." + key.encode("utf-8", "backslashreplace").decode("utf-8"))
    return "body" + "".join(reversed(parts))


class _Checker:
    """One pass over a parsed body: counts, non-finite numbers, lone surrogates."""

    __slots__ = ("limits", "messages", "texts")

    def __init__(self, limits: JsonLimits, texts: bool) -> None:
        self.limits = limits
        self.texts = texts
        self.messages = 0

    def check(self, value: Any) -> None:
        if type(value) is not dict and type(value) is not list:
            self._scalar(value, None)
            return
        stack: list[tuple[Any, int, _Path]] = [(value, 1, None)]
        while stack:
            node, depth, path = stack.pop()
            if depth > self.limits.max_depth:
                self.limits.refuse("max_depth", depth, _where(path))
            if type(node) is dict:
                if len(node) > self.limits.max_keys:
                    self.limits.refuse("max_keys", len(node), _where(path))
                items: Any = node.items()
            else:
                items = enumerate(node)
            for key, item in items:
                kind = type(item)
                if kind is dict or kind is list:
                    stack.append((item, depth + 1, (path, key)))
                    if key == "messages" and kind is list:
                        self._messages(item, (path, key))
                else:
                    self._scalar(item, (path, key))
                if self.texts and type(key) is str:
                    self._text(key, path)

    def _messages(self, messages: list[Any], path: _Path) -> None:
        self.messages += len(messages)
        if self.messages > self.limits.max_messages:
            self.limits.refuse("max_messages", self.messages, _where(path))
        for index, message in enumerate(messages):
            content = message.get("content") if type(message) is dict else None
            if type(message) is list and len(message) == 2:
                content = message[1]  # a ["user", [...]] pair
            if type(content) is list and len(content) > self.limits.max_content_blocks:
                where = _where(((path, index), "content"))
                self.limits.refuse("max_content_blocks", len(content), where)

    def _scalar(self, value: Any, path: _Path) -> None:
        if type(value) is float and not math.isfinite(value):
            raise HTTPException(
                422, f"{_where(path)}: {value} is not a JSON number (too large for a double)"
            )
        if self.texts and type(value) is str:
            self._text(value, path)

    def _text(self, text: str, path: _Path) -> None:
        found = lone_surrogate(text)
        if found is not None:
            raise HTTPException(
                422,
                f"{_where(path)}: holds a lone surrogate ({found.group()!r} at index "
                f"{found.start()}), which is not text: send valid Unicode",
            )


class _CheckedRequest(Request):
    """A request whose ``json()`` is ``parse_json_body`` under the app's limits."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            limits: JsonLimits = self.app.state.context.settings.json_limits
            self._json = parse_json_body(await self.body(), limits)
        return self._json


class CheckedJsonRoute(APIRoute):
    """A route whose JSON body is parsed by ``parse_json_body`` (FastAPI reads it by ``json()``).

    FastAPI passes an ``HTTPException`` raised while reading the body on as
    the answer, and answers a ``json.JSONDecodeError`` as its 422.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, given the request as a ``_CheckedRequest``."""
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            return await handler(_CheckedRequest(request.scope, request.receive))

        return checked
