"""Shared timing helper: the best of several repeats, so other load on the machine counts least."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_us(action: Callable[[], object], *, number: int, repeat: int = 7) -> float:
    """Microseconds per call of ``action``: the fastest of ``repeat`` rounds of ``number`` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(number):
            action()
        best = min(best, (time.perf_counter_ns() - start) / number / 1e3)
    return round(best, 2)
