"""``tenxgraph run module:attr``: run a user's graph on one input and print what it produced."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.locations import open_checkpointer
from tenxgraph.cli.render import Console
from tenxgraph.cli.turns import stream_turn
from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state.message import Message

__all__ = ["load_graph", "run_graph"]


def load_graph(target: str) -> CompiledGraph[Any] | StateGraph[Any]:
    """Import ``module:attribute`` (the current directory is importable) and return the graph."""
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise CliError(f"expected module:graph (e.g. app:graph), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise CliError(f"cannot import module {module_name!r}: {exc}") from exc
        raise
    graph: Any = module
    for part in attribute.split("."):
        if not hasattr(graph, part):
            raise CliError(f"module {module_name!r} has no attribute {attribute!r}")
        graph = getattr(graph, part)
    if not isinstance(graph, (CompiledGraph, StateGraph)):
        raise CliError(
            f"{target} is not a StateGraph or a CompiledGraph (it is {type(graph).__name__})"
        )
    return graph


async def run_graph(
    target: str,
    text: str,
    *,
    thread_id: str | None,
    user_id: str | None,
    db: str,
    console: Console,
) -> None:
    """Run the graph on one user message and print the messages it adds.

    A ``StateGraph`` is compiled here, saving to ``db`` when a thread is
    given; a ``CompiledGraph`` runs as its module built it.
    """
    graph = load_graph(target)
    if isinstance(graph, StateGraph):
        if thread_id is None:
            await _run(graph.compile(), text, {}, console)
            return
        async with open_checkpointer(db) as checkpointer:
            await _run(graph.compile(checkpointer), text, _config(thread_id, user_id), console)
        return
    if thread_id is None and graph.checkpointer is not None:
        raise CliError(f"{target} saves threads (it has a checkpointer): pass --thread ID")
    await _run(graph, text, _config(thread_id, user_id), console)


def _config(thread_id: str | None, user_id: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if thread_id:
        config["thread_id"] = thread_id
        if user_id:
            config["user_id"] = user_id
    return config


async def _run(
    graph: CompiledGraph[Any], text: str, config: dict[str, Any], console: Console
) -> None:
    result = await stream_turn(graph, {"messages": [Message.text_message(text)]}, config, console)
    if result.interrupt is not None:
        console.note(
            f"paused at node {result.interrupt.node!r}: {result.interrupt.value!r} "
            "(resume it from Python with invoke({'resume': answer}, config))"
        )
    if not result.messages:
        console.note("(the graph added no messages)")
