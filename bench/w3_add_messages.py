"""W3, public API: ``add_messages(left, [new])`` (``tenxgraph.core.state.reducers``) into a
list of 100,000 messages, and of 1,000, in microseconds per call. Target: <= 3x one
``list(left)`` copy (``bench.floors.w3_list_copy``), since the reducer returns a new list by
contract; at 1,000, 10xGraph's 57 µs.

The runtime does not call it on its hot path (``w3_merge`` times the runtime's merge); it
is what a user's own reducer or a custom state field calls.

Run: ``python -m bench.w3_add_messages``.
"""

from __future__ import annotations

from typing import Any

from bench._timing import best_us
from tenxgraph.core.state import Message
from tenxgraph.core.state.reducers import add_messages

SIZE = 100_000
SHORT = 1_000
"""The small history of the peers' figure (10xGraph 0.10.3: 57 µs, issue 38)."""


def history(size: int = SIZE) -> list[Message]:
    return [Message.text_message(f"m{i}") for i in range(size)]


def run() -> dict[str, Any]:
    left = history()
    new = Message.text_message("new", role="assistant")
    merged = add_messages(left, [new])
    assert len(merged) == SIZE + 1 and merged[-1] is new
    short = left[:SHORT]
    return {
        "add_messages_us_at_100000": best_us(lambda: add_messages(left, [new]), number=20),
        "add_messages_us_at_1000": best_us(lambda: add_messages(short, [new]), number=2000),
    }


if __name__ == "__main__":
    print(run())
