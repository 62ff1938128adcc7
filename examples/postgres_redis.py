"""Postgres for durable threads, Redis as a verified hot cache, two "processes" on one thread.

Needs PostgreSQL at 127.0.0.1:5432 (database test, user postgres) and Redis
at 127.0.0.1:6379; set TENXGRAPH_PG / TENXGRAPH_REDIS to use others. The
thread is deleted at the end, so the example leaves nothing behind.
Run: python examples/postgres_redis.py
"""

import asyncio
import os
import uuid

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import Message, MessageContextManager, ThreadKey
from tenxgraph.storage.checkpointer import PgCheckpointer

DSN = os.environ.get("TENXGRAPH_PG", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("TENXGRAPH_REDIS", "redis://127.0.0.1:6379")


def count_messages(request: ModelRequest) -> str:
    return f"I was sent {len(request.messages)} messages."


def make_app(checkpointer: PgCheckpointer):
    return create_agent(
        FunctionModel(count_messages),
        checkpointer=checkpointer,
        context_manager=MessageContextManager(max_messages=2),
        trim_context=True,
    )


async def main() -> None:
    # Tenants: every query is scoped by user_id, so one user never sees another's threads.
    config = {"thread_id": f"support-{uuid.uuid4().hex[:8]}", "user_id": "acme"}
    key = ThreadKey.from_config(config)
    first = PgCheckpointer(DSN, redis=REDIS)
    try:
        app = make_app(first)
        for text in ("Hi!", "My order is late.", "It is order A1001."):
            result = await app.ainvoke({"messages": [Message.text_message(text)]}, config)
            print(f"user: {text:20} assistant: {result['messages'][-1].text()}")

        # A second checkpointer (think: another web worker) continues the same thread.
        second = PgCheckpointer(DSN, redis=REDIS)
        try:
            other = make_app(second)
            result = await other.ainvoke({"messages": [Message.text_message("Thanks")]}, config)
            print("second worker:", result["messages"][-1].text())
            log = await second.alist_messages(key)
            state = await other.aget_state(config)
            print(f"stored log: {len(log)} messages; context window: {len(state.context)}")
            threads = await second.alist_threads("acme")
            print("threads of acme include ours:", any(t.key == key for t in threads))
        finally:
            await second.aclose()
    finally:
        print("deleted the example thread:", await first.adelete_thread(key))
        await first.aclose()


asyncio.run(main())
