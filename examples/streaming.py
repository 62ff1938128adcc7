"""Streaming: what ``astream`` yields, event by event.

MessageEvent carries a streamed chunk (``message.delta``, never stored) or a
complete message; UpdateEvent says what a node changed; the last event is
the RunResult (what ``invoke`` returns as a dict). The model is a
FunctionModel, which streams word by word like a real adapter.
Run: python examples/streaming.py
"""

import asyncio

from tenxgraph.core.graph import MessageEvent, RunResult, UpdateEvent, create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message


def answer(request: ModelRequest) -> str:
    return "Streaming shows each token as soon as the model produces it."


app = create_agent(FunctionModel(answer))


async def main() -> None:
    chunks = 0
    async for event in app.astream({"messages": [Message.text_message("Why stream?")]}):
        if isinstance(event, MessageEvent) and event.message.delta:
            chunks += 1
            print(event.message.text(), end="|", flush=True)
        elif isinstance(event, MessageEvent):
            print(f"\ncomplete message from {event.node!r}: {event.message.text()!r}")
        elif isinstance(event, UpdateEvent):
            print(f"node {event.node!r} finished step {event.step}, added {len(event.messages)}")
        elif isinstance(event, RunResult):
            print(f"run result: {len(event.messages)} new message(s), {chunks} streamed chunks")


asyncio.run(main())
