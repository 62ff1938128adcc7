"""The server's SSE response: its headers and frames, HEAD, and a client that goes away."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenxgraph.runs import DRAIN_SECONDS
from tenxgraph.server._sse import EXIT_POLL_SECONDS, EventStreamResponse, LastFrame, comment
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.testing.server import served
from tests.server.test_run_settling import _wait_ok, serve_slow_app
from tests.server.test_runs import AGENT, slow_graph, user_input

HEADERS = [
    (b"location", b"/threads/t/runs/r"),
    (b"cache-control", b"no-store"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
    (b"content-type", b"text/event-stream; charset=utf-8"),
]
"""What sse-starlette's ``EventSourceResponse`` answered, in its order."""


class Client:
    """An ASGI server's side of one request: what was sent, and a disconnect to trigger."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def scope(method: str = "GET") -> dict[str, Any]:
    return {"type": "http", "method": method}


def test_frames_are_written_as_they_come_then_the_end() -> None:
    async def frames() -> AsyncGenerator[bytes, None]:
        yield b"id: 1\r\nevent: metadata\r\ndata: {}\r\n\r\n"
        yield comment("ping")
        yield b"id: 2\r\nevent: end\r\ndata: null\r\n\r\n"

    async def main() -> list[dict[str, Any]]:
        client = Client()
        response = EventStreamResponse(frames(), headers={"Location": "/threads/t/runs/r"})
        await response(scope(), client.receive, client.send)
        return client.sent

    sent = asyncio.run(main())
    assert sent[0] == {"type": "http.response.start", "status": 200, "headers": HEADERS}
    bodies = [(m["body"], m["more_body"]) for m in sent[1:]]
    assert bodies[0] == (b"id: 1\r\nevent: metadata\r\ndata: {}\r\n\r\n", True)
    assert bodies[1][0].startswith(b": ping - ") and bodies[1][0].endswith(b"\r\n\r\n")
    assert bodies[2:] == [(b"id: 2\r\nevent: end\r\ndata: null\r\n\r\n", True), (b"", False)]


def test_a_last_frame_goes_out_with_the_end_unless_more_follow() -> None:
    async def frames(more: bool) -> AsyncGenerator[bytes, None]:
        yield LastFrame(b"a")
        if more:
            yield b"b"

    async def main(more: bool) -> list[tuple[bytes, bool]]:
        client = Client()
        await EventStreamResponse(frames(more))(scope(), client.receive, client.send)
        return [(m["body"], m["more_body"]) for m in client.sent[1:]]

    assert asyncio.run(main(False)) == [(b"a", False)]
    assert asyncio.run(main(True)) == [(b"a", True), (b"b", True), (b"", False)]


def test_head_sends_the_headers_only_and_never_starts_the_stream() -> None:
    started = False

    async def frames() -> AsyncGenerator[bytes, None]:
        nonlocal started
        started = True
        yield b"x"

    async def main() -> list[dict[str, Any]]:
        client = Client()
        await EventStreamResponse(frames())(scope("HEAD"), client.receive, client.send)
        return client.sent

    sent = asyncio.run(main())
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"" and not sent[1]["more_body"] and not started


def test_a_client_gone_stops_a_waiting_stream_and_its_generator_cleans_up() -> None:
    """The stream waits for an event that never comes; the client leaves: all of it ends."""
    cleaned = asyncio.Event()

    async def frames() -> AsyncGenerator[bytes, None]:
        try:
            yield b"first"
            await asyncio.Event().wait()  # a run that waits for a person
            yield b"never"
        finally:
            await asyncio.sleep(0)  # cleanup may await (a run is cancelled there)
            cleaned.set()

    async def main() -> tuple[list[dict[str, Any]], int, set[asyncio.Task[Any]]]:
        client = Client()
        response = EventStreamResponse(frames())

        async def request() -> int:
            await response(scope("POST"), client.receive, client.send)
            task = asyncio.current_task()
            assert task is not None
            return task.cancelling()  # the watch's cancellation is not left on the task

        before = asyncio.all_tasks()
        task = asyncio.create_task(request())
        await asyncio.sleep(0.01)
        client.gone.set()
        cancelling = await asyncio.wait_for(task, 5)
        await asyncio.sleep(EXIT_POLL_SECONDS * 1.5)  # the loop's stop watch ends too
        return client.sent, cancelling, asyncio.all_tasks() - before

    sent, cancelling, left = asyncio.run(main())
    assert cleaned.is_set()
    assert [m.get("body") for m in sent[1:]] == [b"first"]  # no closing write to a gone client
    assert cancelling == 0
    assert not left  # the disconnect watch ended with the response


def test_a_server_cancellation_is_not_taken_for_a_disconnect() -> None:
    async def frames() -> AsyncGenerator[bytes, None]:
        yield b"first"
        await asyncio.Event().wait()

    async def main() -> bool:
        client = Client()
        task = asyncio.create_task(
            EventStreamResponse(frames())(scope("POST"), client.receive, client.send)
        )
        await asyncio.sleep(0.01)
        task.cancel()  # the server's graceful shutdown ran out
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(main())


def test_a_failing_stream_raises_and_leaves_no_watch_behind() -> None:
    async def frames() -> AsyncGenerator[bytes, None]:
        yield b"first"
        raise ValueError("the stream broke")

    async def main() -> tuple[str, set[asyncio.Task[Any]]]:
        client = Client()
        before = asyncio.all_tasks()
        try:
            await EventStreamResponse(frames())(scope("POST"), client.receive, client.send)
        except ValueError as exc:
            error = str(exc)
        await asyncio.sleep(EXIT_POLL_SECONDS * 1.5)
        return error, asyncio.all_tasks() - before

    error, left = asyncio.run(main())
    assert error == "the stream broke" and not left


def test_a_client_leaving_a_running_runs_stream_stops_its_reader(tmp_path: Path) -> None:
    """Over uvicorn: the reader of a run still going leaves the run's log when its client goes."""
    from tenxgraph.server.app import create_app

    # 12 s of run: a loaded machine must not end it before its reader waits (the test itself
    # takes a second: the server's stop cancels the run)
    graph = slow_graph(2.0, 6)(SqliteCheckpointer(str(tmp_path / "t.sqlite")))
    app = create_app(graph)
    registry = app.state.context.state["runs"]
    with served(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        request = {"assistant_id": AGENT, "input": user_input("go"), "if_not_exists": "create"}
        run_id = client.post("/threads/d1/runs", json=request).json()["run_id"]
        log = registry.get("default", run_id).log
        with client.stream("GET", f"/threads/d1/runs/{run_id}/stream") as response:
            assert response.status_code == 200
            next(response.iter_lines())
            deadline = time.monotonic() + 5
            while not log._waiters and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(log._waiters) == 1  # the reader waits for the run's next event
        deadline = time.monotonic() + 5
        while log._waiters and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not log._waiters  # gone with its client, long before the run's next step
        assert registry.get("default", run_id).status == "running"


@pytest.mark.slow
def test_sigterm_ends_open_streams_cleanly_at_once(tmp_path: Path) -> None:
    """A thread's stream never ends by itself: it must not hold the server's stop (or a reload)."""
    process, url = serve_slow_app(tmp_path)
    ended: dict[str, str] = {}
    opened = threading.Semaphore(0)

    def follow(name: str, path: str) -> None:
        try:
            with httpx.stream("GET", url + path, timeout=30) as response:
                opened.release()  # the headers came: the server holds this stream now
                for _ in response.iter_lines():
                    pass
            ended[name] = "clean"
        except httpx.HTTPError as exc:
            ended[name] = type(exc).__name__

    try:
        _wait_ok(url, process)
        body = {"assistant_id": AGENT, "input": user_input("x"), "if_not_exists": "create"}
        run = httpx.post(f"{url}/threads/q/runs", json=body, timeout=10).json()
        paths = {"run": f"/threads/q/runs/{run['run_id']}/stream", "thread": "/threads/q/stream"}
        readers = [threading.Thread(target=follow, args=item) for item in paths.items()]
        for reader in readers:
            reader.start()
        for _ in readers:  # a loaded machine may take a while to open them
            assert opened.acquire(timeout=30), "a stream did not open"
        process.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        process.wait(30)
        took = time.monotonic() - sent
        for reader in readers:
            reader.join(5)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # Streams that held the stop would be cut when uvicorn's graceful time ran out: a
    # broken read (RemoteProtocolError) after DRAIN_SECONDS, not a clean end before it.
    assert ended == {"run": "clean", "thread": "clean"}
    assert took < DRAIN_SECONDS, took
