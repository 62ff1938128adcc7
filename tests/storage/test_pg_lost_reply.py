"""A save whose connection breaks after Postgres committed it: the reply is lost, not the write.

A TCP proxy between the checkpointer and the shared Postgres forwards a chosen
save, lets the server commit it (it waits for the server's ReadyForQuery),
and then resets the client's connection instead of passing the reply on. The
retry must find the write it made, never append its messages twice or report
a conflict with itself, and give the thread's lease up if the save was to.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.storage.checkpointer import PgCheckpointer
from tests.storage.conftest import drop_schema

pytestmark = pytest.mark.postgres

SAVE = b"WITH claimed AS"
"""Text of the save statement (sent with each save: psycopg prepares a statement only
after five uses on one connection, and these runs make fewer saves than that)."""


def _has_ready_for_query(data: bytes) -> bool:
    """True when ``data`` (server messages from a boundary on) holds a whole ReadyForQuery."""
    position = 0
    while position + 5 <= len(data):
        length = int.from_bytes(data[position + 1 : position + 5], "big")
        if data[position] == ord("Z") and position + 1 + length <= len(data):
            return True
        position += 1 + length
    return False


class ReplyCutter:
    """Proxies to 127.0.0.1:5432; the ``nth`` save sent from now on loses its reply."""

    def __init__(self) -> None:
        self.nth = 0
        self.saves = 0
        self.cut = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.Task[None]] = set()
        """The connections being proxied: ended and awaited by ``aclose``."""

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        """Stop listening, end every proxied connection and wait for all of it to close."""
        if self._server is not None:
            self._server.close()
        for link in self._links:
            link.cancel()
        await asyncio.gather(*self._links, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def dsn(self) -> str:
        return (
            f"postgresql://postgres@127.0.0.1:{self.port}/test?sslmode=disable&gssencmode=disable"
        )

    def arm(self, nth: int) -> None:
        self.nth, self.saves = nth, 0

    async def _serve(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        link = asyncio.current_task()
        assert link is not None
        self._links.add(link)
        try:
            await self._proxy(client, to_client)
        finally:
            self._links.discard(link)

    async def _proxy(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        try:
            server, to_server = await asyncio.open_connection("127.0.0.1", 5432)
        except OSError:
            to_client.transport.abort()
            return
        cutting = asyncio.Event()

        async def up() -> None:
            while data := await client.read(65536):
                if SAVE in data:
                    self.saves += 1
                    if self.saves == self.nth:
                        cutting.set()
                to_server.write(data)
                await to_server.drain()

        async def down() -> None:
            held = b""
            while data := await server.read(65536):
                if cutting.is_set():  # committed once the server is ready again
                    held += data
                    if _has_ready_for_query(held):
                        self.cut += 1
                        return
                    continue
                to_client.write(data)
                await to_client.drain()

        upward = asyncio.ensure_future(up())
        try:
            with contextlib.suppress(OSError):
                await down()
        finally:
            upward.cancel()
            await asyncio.gather(upward, return_exceptions=True)
            to_client.transport.abort()  # a reset, as a dropped network path gives
            to_server.close()
            with contextlib.suppress(OSError):
                await to_server.wait_closed()


@pytest.fixture
async def cutter() -> AsyncIterator[ReplyCutter]:
    proxy = ReplyCutter()
    await proxy.start()
    yield proxy
    await proxy.aclose()


@pytest.fixture
async def checkpointer(cutter: ReplyCutter, pg_schema: str) -> AsyncIterator[PgCheckpointer]:
    made = PgCheckpointer(cutter.dsn(), schema=pg_schema, connect_timeout=2.0)
    yield made
    await made.aclose()
    await drop_schema(pg_schema)


def app_on(checkpointer: PgCheckpointer) -> Any:
    async def work(state: AgentState) -> Message:
        return Message.text_message("worked", role="assistant")

    async def after(state: AgentState) -> Message:
        return Message.text_message("after", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("work", work)
    graph.add_node("after", after)
    graph.set_entry_point("work")
    graph.add_edge("work", "after")
    return graph.compile(checkpointer)


def said(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


async def saves_per_run(app: Any, cutter: ReplyCutter) -> int:
    cutter.arm(0)
    await app.ainvoke(said("count"), {"thread_id": "counting"})
    return cutter.saves


async def stored(checkpointer: PgCheckpointer, thread: str) -> tuple[list[str], list[int]]:
    key = ThreadKey(thread)
    texts = [m.message.text() for m in await checkpointer.alist_messages(key)]
    versions = [c.version for c in await checkpointer.alist_checkpoints(key)]
    return texts, versions


async def test_a_step_save_whose_reply_is_lost_is_found_not_repeated(
    cutter: ReplyCutter, checkpointer: PgCheckpointer
) -> None:
    app = app_on(checkpointer)
    assert await saves_per_run(app, cutter) >= 3  # the input, a step, the end
    cutter.arm(2)  # the first step's save: messages of the step with it
    result = await asyncio.wait_for(app.ainvoke(said("go"), {"thread_id": "t"}), 60)
    assert cutter.cut == 1
    assert result["state"].execution_meta.status == "completed"
    texts, versions = await stored(checkpointer, "t")
    assert texts == ["go", "worked", "after"]  # each once
    assert versions == list(range(len(versions), 0, -1))  # no version skipped or repeated


async def test_a_last_save_whose_reply_is_lost_still_frees_the_thread(
    cutter: ReplyCutter, checkpointer: PgCheckpointer
) -> None:
    app = app_on(checkpointer)
    cutter.arm(await saves_per_run(app, cutter))  # the run's last save gives the lease up
    config = {"thread_id": "t"}
    result = await asyncio.wait_for(app.ainvoke(said("go"), config), 60)
    assert cutter.cut == 1
    assert result["state"].execution_meta.status == "completed"
    other = app_on(PgCheckpointer(cutter.dsn(), schema=checkpointer.schema))
    try:  # another process, 'reject': the lease went with the save that lost its reply
        again = await asyncio.wait_for(other.ainvoke(said("again"), config), 30)
    finally:
        await other.checkpointer.aclose()
    assert again["state"].execution_meta.status == "completed"
    texts, _ = await stored(checkpointer, "t")
    assert texts == ["go", "worked", "after", "again", "worked", "after"]
