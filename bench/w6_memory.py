"""W6: 100 threads x 1,000 messages in ``InMemoryCheckpointer``, bytes per message.

Threads are filled the way runs fill them (one save per user message and
reply, so each thread also holds 500 checkpoints). Memory is what
tracemalloc sees the store holding after the fill, divided by the number of
messages. Budget: <= 2 KB per message.

Run: ``python -m bench.w6_memory``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from typing import Any

from tenxgraph.core.state.message import Message, TokenUsages
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, ThreadKey, ThreadWrite

THREADS = 100
MESSAGES = 1_000


async def fill(checkpointer: InMemoryCheckpointer) -> None:
    for thread in range(THREADS):
        key = ThreadKey(f"thread-{thread}", f"user-{thread % 10}")
        incarnation: str | None = None
        version = 0
        for turn in range(MESSAGES // 2):
            usage = TokenUsages(completion_tokens=20, prompt_tokens=100, total_tokens=120)
            messages = [
                Message.text_message(f"Question {turn} in thread {thread}: how does this work?"),
                Message.text_message(
                    f"Answer {turn}: it works like this, step by step.",
                    role="assistant",
                    usages=usage,
                ),
            ]
            values = {
                "context_summary": None,
                "execution_meta": {"current_node": "MAIN", "step": turn, "status": "completed"},
            }
            write = ThreadWrite(
                version, messages, values, [(0, 2 * turn + 2)], node="MAIN", step=turn
            )
            write.expected_incarnation = incarnation
            incarnation, version = await checkpointer.asave(key, write)


def run() -> dict[str, Any]:
    """Fill the store under tracemalloc and report bytes per message."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    checkpointer = InMemoryCheckpointer()
    asyncio.run(fill(checkpointer))
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    total = THREADS * MESSAGES
    return {
        "threads": THREADS,
        "messages": total,
        "store_mb": round((after - before) / 1e6, 2),
        "bytes_per_message": round((after - before) / total),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
