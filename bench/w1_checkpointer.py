"""W1 with an ``InMemoryCheckpointer``: the same 3-node graph as ``w1_invoke``,
microseconds per ``invoke``. Target: <= 6x the W1 floor (2x the 3x budget without one).

Each ``invoke`` starts a fresh thread (``thread_id`` w1-0, w1-1, ...), so the figure is
the cost of a durable run (take the thread, save its input and each step, give it up)
and does not depend on how long one thread has grown; ``w2_scaling`` measures that.
A run that creates its thread does not keep it warm (docs/persistence-and-threads.md),
so the warm-thread cache stays empty here.

Run: ``python -m bench.w1_checkpointer``.
"""

from __future__ import annotations

import itertools
from typing import Any

from bench._timing import best_us
from bench.w1_invoke import three_nodes
from tenxgraph.core.state import Message
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


def run() -> dict[str, Any]:
    app = three_nodes(InMemoryCheckpointer())
    question = {"messages": [Message.text_message("hi")]}
    threads = itertools.count()

    def one_invoke() -> object:
        return app.invoke(question, {"thread_id": f"w1-{next(threads)}"})

    result = app.invoke(question, {"thread_id": "check"})
    assert len(result["state"].context) == 4
    return {"invoke_us": best_us(one_invoke, number=1_000)}


if __name__ == "__main__":
    print(run())
