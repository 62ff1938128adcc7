"""Reading a line from the user without blocking the event loop or Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Awaitable, Callable

__all__ = ["Reader", "read_line", "stdin_is_terminal"]

Reader = Callable[[str], Awaitable[str]]
"""Reads one line of input after printing a prompt; raises EOFError at the end."""


async def read_line(prompt: str) -> str:
    """``input()`` in a daemon thread: the event loop stays free, and Ctrl-C never waits for it.

    (A thread of the default executor would keep the process alive after
    Ctrl-C until the user pressed Enter.)
    """
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def settle(value: str, error: BaseException | None) -> None:
        if answer.done():
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(value)

    def work() -> None:
        error: BaseException | None = None
        value = ""
        try:
            value = input(prompt)
        except BaseException as exc:  # EOFError (Ctrl-D) and friends go to the awaiting task
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="tenxgraph-input", daemon=True).start()
    return await answer


def stdin_is_terminal() -> bool:
    """True when a person can answer a question (stdin is a terminal)."""
    stdin = sys.stdin
    return stdin is not None and not stdin.closed and stdin.isatty()
