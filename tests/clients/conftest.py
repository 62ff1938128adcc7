"""Servers for the client tests: scripted-model graphs over SQLite behind real uvicorn.

``serve_graph(build, **create_app_options)`` starts a server for the test and
returns its base URL (``tenxgraph.testing.server.served``, the server's own
test helper). The graphs answer without a model provider:

- ``talker``: answers "said: <text> <N words>" streamed word by word, so a
  run has many events to cut a connection in the middle of;
- ``slow``: an async model that sleeps first (for busy threads and cancel);
- ``failing``: its model raises;
- ``clocked``: calls the remote tool ``clock`` and answers with its result;
- ``tooled``: in-process tools ``add`` and ``divide`` to call directly, a
  context window of three messages at most (so the log outgrows it), and a
  model that fails on "break" (an unfinished turn to roll back).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import CompiledGraph, create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.context import SlidingWindowContextManager
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer
from tenxgraph.testing.server import served

AGENT = "agent"
WORDS = 40

Build = Callable[[Checkpointer], CompiledGraph[Any]]
ServeGraph = Callable[..., str]


def last_user_text(request: ModelRequest) -> str:
    texts = [m.text() for m in request.messages if m.role == "user"]
    return texts[-1] if texts else ""


def talker(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    def answer(request: ModelRequest) -> str:
        return f"said: {last_user_text(request)} " + " ".join(f"w{i}" for i in range(WORDS))

    return create_agent(FunctionModel(answer), checkpointer=checkpointer)


def slow(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    async def answer(request: ModelRequest) -> str:
        await asyncio.sleep(float(last_user_text(request) or "0"))
        return "done sleeping"

    return create_agent(FunctionModel(answer), checkpointer=checkpointer)


def failing(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    def answer(request: ModelRequest) -> str:
        raise ValueError("model broke")

    return create_agent(FunctionModel(answer), checkpointer=checkpointer)


def clocked(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    from tenxgraph.core.graph._remote_tools import RemoteTool

    clock = RemoteTool(
        "clock",
        "The time on the user's machine.",
        {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
    )

    def answer(request: ModelRequest) -> Message | ToolCallBlock:
        last = request.messages[-1]
        results = last.tool_results()
        if results:
            flag = "error" if results[0].is_error else "ok"
            return Message.text_message(f"clock {flag}: {last.text()}", role="assistant")
        return ToolCallBlock(id=f"c-{uuid.uuid4().hex[:8]}", name="clock", args={"tz": "UTC"})

    return create_agent(FunctionModel(answer), tools=[clock], checkpointer=checkpointer)


def tooled(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    def answer(request: ModelRequest) -> str:
        text = last_user_text(request)
        if text == "break":
            raise ValueError("model broke")
        return f"said: {text}"

    return create_agent(
        FunctionModel(answer),
        tools=[add, divide],
        context_manager=SlidingWindowContextManager(window_size=3),
        checkpointer=checkpointer,
    )


@pytest.fixture
def serve_graph(tmp_path: Path) -> Iterator[ServeGraph]:
    """Start servers for the test; each call returns a new base URL."""
    with ExitStack() as stack:

        def start(build: Build = talker, **options: Any) -> str:
            from tenxgraph.server.app import create_app

            checkpointer = SqliteCheckpointer(str(tmp_path / f"{uuid.uuid4().hex[:8]}.sqlite"))
            app = create_app(build(checkpointer), **options)
            app.state.context.on_shutdown.append(checkpointer.aclose)
            return stack.enter_context(served(app))

        yield start
