"""A local HTTP server that replays provider responses, for testing adapters through real SDKs.

Each test queues the responses the server should give (JSON bodies, error
statuses, or server-sent-event streams) and reads back the requests the SDK
sent. Only loopback is used. Point the provider's SDK (or your adapter) at
``server.url``::

    with ReplayServer() as server:
        server.stream([chat_chunk({"content": "Hi"}, "stop"), "[DONE]"])
        model = OpenAIChatModel("gpt-test", base_url=f"{server.url}/v1", api_key="test")
        ...
        assert server.requests[0].body["model"] == "gpt-test"

The standard library is all it needs (no pytest).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Recorded", "ReplayServer", "Reply", "chat_chunk"]


@dataclass
class Reply:
    """One queued response."""

    status: int = 200
    body: Any = None
    """JSON body (ignored when ``events`` is set)."""
    events: Sequence[Any] | None = None
    """Server-sent events: each item is JSON-encoded into a ``data:`` line, or a
    ``(event_name, payload)`` pair for named events. ``"[DONE]"`` is sent verbatim."""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """As the client spelled them; ``header`` looks one up by any spelling."""
    body: Any
    """JSON, or the raw bytes for anything else (a multipart or raw file upload)."""

    def header(self, name: str) -> str | None:
        """The value of header ``name``, matched case-insensitively (None when absent)."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


class ReplayServer:
    """Serve queued replies in order; fail loudly on a request with nothing queued."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(
        self, body: Any = None, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        """Queue one JSON response (``status`` other than 200 for an error)."""
        self.replies.append(Reply(status=status, body=body, headers=headers or {}))

    def stream(self, events: Sequence[Any], *, headers: dict[str, str] | None = None) -> None:
        """Queue one server-sent-event stream (see ``Reply.events``)."""
        self.replies.append(Reply(events=events, headers=headers or {}))

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Keep the test output quiet."""

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                server.requests.append(
                    Recorded(self.command, self.path, dict(self.headers.items()), body)
                )
                if not server.replies:
                    self._send_json(
                        599, {"error": {"message": f"no reply queued for {self.path}"}}, {}
                    )
                    return
                reply = server.replies.popleft()
                if reply.events is None:
                    self._send_json(reply.status, reply.body, reply.headers)
                else:
                    self._send_events(reply.events, reply.headers)

            do_GET = do_POST = do_DELETE = _serve

            def _send_json(self, status: int, body: Any, headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_events(self, events: Sequence[Any], headers: dict[str, str]) -> None:
                data = b"".join(_sse(events))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _sse(events: Sequence[Any]) -> Iterator[bytes]:
    for event in events:
        if event == "[DONE]":
            yield b"data: [DONE]\n\n"
        elif isinstance(event, tuple):
            name, payload = event
            yield f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
        else:
            yield f"data: {json.dumps(event)}\n\n".encode()


def chat_chunk(
    delta: dict[str, Any], finish: str | None = None, *, model: str = "gpt-test"
) -> dict[str, Any]:
    """One OpenAI Chat Completions stream chunk with a single choice."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
