"""Run one turn of a graph and print it as it happens: tokens as they stream, then each message."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from tenxgraph.cli.render import Console, Spinner, block_text, usage_text
from tenxgraph.core.graph import CompiledGraph, MessageEvent, RunResult, UpdateEvent
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import TextBlock
from tenxgraph.errors import GraphRunError

__all__ = ["stream_turn"]


async def stream_turn(
    app: CompiledGraph[Any],
    input: Mapping[str, Any],
    config: Mapping[str, Any],
    console: Console,
    *,
    prefix: str = "",
    spinner: bool = True,
    show_updates: bool = False,
) -> RunResult:
    """Run ``app`` through ``astream``; print streamed tokens and every complete message.

    The input messages are not printed (the caller shows them). A spinner
    runs on stderr until the first output (``spinner=False`` when something
    else prints meanwhile); ``show_updates`` also prints the non-message
    fields each node changed. Returns the run's ``RunResult``.
    """
    streaming = False
    waiting = Spinner("thinking...") if spinner else None
    events = app.astream(input, config)
    async with contextlib.aclosing(events):  # a cancelled turn lets go of its thread at once
        with waiting or contextlib.nullcontext():
            async for event in events:
                if isinstance(event, RunResult):
                    if streaming:
                        console.line()
                    return event
                if isinstance(event, UpdateEvent) and show_updates and event.values:
                    changed = ", ".join(f"{k} = {v!r}" for k, v in event.values.items())
                    console.line(
                        f"{prefix}state update from node {event.node!r}: {changed}", "blue"
                    )
                if not isinstance(event, MessageEvent):
                    continue
                if waiting is not None:
                    waiting.stop()
                message = event.message
                if message.delta:
                    if not streaming:
                        console.write(f"{prefix}{console.role(message.role)} ")
                        streaming = True
                    console.write(message.text())
                elif streaming:
                    console.line()
                    streaming = False
                    _rest(console, message, prefix)
                else:
                    console.message(message, prefix=prefix)
    raise GraphRunError("the run ended without a result")  # pragma: no cover


def _rest(console: Console, message: Message, prefix: str) -> None:
    """After streamed text: the blocks that were not streamed, and the usage."""
    pad = " " * (len(prefix) + 10)
    for block in message.content:
        if not isinstance(block, TextBlock):
            console.line(f"{pad}{block_text(block)}")
    if message.usages is not None:
        console.line(f"{pad}{console.paint(usage_text(message.usages), 'dim')}")
