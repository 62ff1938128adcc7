"""A stop cancels a router that waits, after a sync node too (a sync node's step is not
armed unless something after it may wait)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.utils import END


def waiting_router(waiting: threading.Event, finished: list[str]) -> Callable[..., Any]:
    async def router(state: AgentState) -> str:
        waiting.set()
        await asyncio.sleep(2)
        finished.append("router")
        return END

    return router


@pytest.mark.parametrize("kind", ["async def", "sync, returns an awaitable"])
def test_a_stop_cancels_a_waiting_router_after_a_sync_node_under_invoke(kind: str) -> None:
    waiting = threading.Event()
    finished: list[str] = []
    router = waiting_router(waiting, finished)
    if kind != "async def":
        inner = router

        def router(state: AgentState) -> Awaitable[str]:  # no coroutine marker
            return inner(state)  # type: ignore[no-any-return]

    graph = StateGraph(AgentState)
    graph.add_node("first", lambda state: Message.text_message("first", role="assistant"))
    graph.set_entry_point("first")
    graph.add_conditional_edges("first", router)
    app = graph.compile()
    config = {"thread_id": "stop-router"}
    stopper = threading.Thread(target=lambda: waiting.wait(5) and app.stop(config))
    stopper.start()
    result = app.invoke({}, config)
    stopper.join()
    assert result["state"].execution_meta.status == "stopped"
    assert finished == []  # cancelled while it waited, not left to finish
