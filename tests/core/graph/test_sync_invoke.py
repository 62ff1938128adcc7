"""``invoke`` of a graph that never waits (sync nodes and routers, no checkpointer, hooks or
context manager) starts its run without a task or a loop turn (``run_sync(task=False)``).
What its nodes see stays as under a task: the running loop, a copy of the caller's
context, nested ``invoke`` calls; a graph with async code still runs in a task."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

from tenxgraph.core.graph import RunHooks, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils import END

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("sync_invoke_test", default="caller")


def line(text: str) -> Message:
    return Message.text_message(text, role="assistant")


def one_node(node: Any, **compile_options: Any) -> Any:
    graph = StateGraph(AgentState)
    graph.add_node("only", node)
    graph.set_entry_point("only")
    return graph.compile(**compile_options)


def test_a_sync_graph_runs_without_a_task_and_its_nodes_see_the_loop_and_a_copied_context() -> None:
    seen: list[Any] = []

    def node(state: AgentState) -> Message:
        SEEN.set("node")
        seen.append((asyncio.get_running_loop() is not None, asyncio.current_task()))
        return line("ok")

    app = one_node(node)
    assert app._runs_inline
    result = app.invoke({})
    assert [m.text() for m in result["messages"]] == ["ok"]
    assert seen == [(True, None)]
    assert SEEN.get() == "caller"  # the node's context variable stayed in the run
    assert asyncio.events._get_running_loop() is None


def test_a_sync_node_can_invoke_another_graph() -> None:
    inner = one_node(lambda state: line("inner"))

    def outer(state: AgentState) -> Message:
        return line(inner.invoke({})["messages"][0].text() + " via outer")

    assert one_node(outer).invoke({})["messages"][0].text() == "inner via outer"


def test_graphs_with_async_code_storage_or_hooks_run_in_a_task() -> None:
    async def async_node(state: AgentState) -> Message:
        async with asyncio.timeout(5):  # needs a task
            await asyncio.sleep(0)
        return line("async")

    def sync_node(state: AgentState) -> Message:
        return line("sync " + str(asyncio.current_task() is not None))

    async def router(state: AgentState) -> str:
        async with asyncio.timeout(5):
            await asyncio.sleep(0)
        return END

    graph = StateGraph(AgentState)
    graph.add_node("only", sync_node)
    graph.set_entry_point("only")
    graph.add_conditional_edges("only", router)
    with_router = graph.compile()
    assert not with_router._runs_inline
    assert with_router.invoke({})["messages"][0].text() == "sync True"
    assert one_node(async_node).invoke({})["messages"][0].text() == "async"
    assert not one_node(async_node)._runs_inline
    assert not one_node(sync_node, checkpointer=InMemoryCheckpointer())._runs_inline
    assert not one_node(sync_node, hooks=[RunHooks()])._runs_inline
    stored = one_node(sync_node, checkpointer=InMemoryCheckpointer())
    assert stored.invoke({}, {"thread_id": "t"})["messages"][0].text() == "sync True"


def test_a_stop_cancels_an_async_router_after_a_sync_node_under_invoke() -> None:
    waiting = threading.Event()
    finished: list[str] = []

    async def router(state: AgentState) -> str:
        waiting.set()
        await asyncio.sleep(2)
        finished.append("router")
        return END

    graph = StateGraph(AgentState)
    graph.add_node("first", lambda state: line("first"))
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
