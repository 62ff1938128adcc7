"""Run a coroutine to completion from synchronous code: the one sync bridge.

Every sync entry point (``invoke``, ``stream``, ``trim_context``,
``get_state``...) is a thin wrapper over its async twin through this module,
so there is one implementation of each operation.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["iterate_sync", "run_sync", "waits_in_sync_call"]

T = TypeVar("T")

CLOSE_SECONDS = 1.0
"""How long work left on a private loop may take to finish when the loop is closed."""

_local = threading.local()

_waiting: dict[asyncio.AbstractEventLoop, int] = {}
"""Running loops whose thread is blocked in ``run_sync`` until a helper thread finishes."""


def waits_in_sync_call(loop: asyncio.AbstractEventLoop) -> bool:
    """True while ``loop``'s thread is blocked in a sync call: nothing scheduled there runs.

    Work handed to such a loop from the helper thread would wait for the
    loop, which waits for the helper: a store that runs on a loop it was
    lent checks this and refuses instead of waiting forever.
    """
    return loop in _waiting


def _loop() -> asyncio.AbstractEventLoop:
    """Return the calling thread's private loop, created once and reused (cheap re-entry)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
        if threading.current_thread() is threading.main_thread():
            atexit.register(_close, loop)  # no "unclosed event loop" warning at process exit
    return loop


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Close a private loop after the work still queued on it has had its turn.

    A run leaves callbacks and small tasks behind on its loop (an SDK's stream
    closing its HTTP response, a fire-and-forget cleanup); closing the loop
    at once would destroy them mid-way ("Task was destroyed but it is
    pending"). They get ``CLOSE_SECONDS`` to finish, then are cancelled; async
    generators left open are closed the same way.
    """
    if loop.is_closed():
        return
    pending = asyncio.all_tasks(loop)
    if pending:
        _, late = loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_SECONDS))
        for task in late:
            task.cancel()
        if late:
            loop.run_until_complete(asyncio.wait(late, timeout=CLOSE_SECONDS))
        for task in pending:
            if task.done() and not task.cancelled():
                task.exception()  # left behind: nobody awaits it, and its end is not news
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _in_running_loop() -> bool:
    return asyncio.events._get_running_loop() is not None  # no exception on the hot path


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` and return its result.

    From plain sync code it runs on a private per-thread loop. Called from
    inside a running loop (a sync node calling ``invoke``), it runs in a
    helper thread so the caller's loop is never re-entered.
    """
    if not _in_running_loop():
        return _complete(_loop(), coroutine)
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(run_sync(coroutine))
        except BaseException as exc:
            error.append(exc)
        finally:
            _close(_loop())  # the helper thread ends here; its private loop must not leak

    thread = threading.Thread(target=target, name="tenxgraph-run-sync")
    blocked = asyncio.get_running_loop()
    _waiting[blocked] = _waiting.get(blocked, 0) + 1
    try:
        thread.start()
        thread.join()
    finally:
        if _waiting[blocked] == 1:
            del _waiting[blocked]
        else:
            _waiting[blocked] -= 1
    if error:
        raise error[0]
    return result[0]


def _complete(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> T:
    """``loop.run_until_complete(coroutine)``, one loop turn and one selector poll cheaper.

    The task's first step runs in one turn of the loop (``stop`` before
    ``run_forever`` makes it a single turn, as documented). A coroutine that
    never waits (a graph of sync nodes without a checkpointer) is done
    after it, without the done callback and the second turn that
    ``run_until_complete`` spends stopping the loop; one that waits goes on
    in ``run_until_complete``. The task is the same in both, so
    ``asyncio.current_task()``, timeouts and the copied context behave as before.
    One difference: a task the coroutine created and left (fire and forget)
    got its first step in ``run_until_complete``'s stopping turn; here it
    waits for the loop's next use on this thread (a helper thread's loop is
    closed with it). Await what must run.
    """
    task = loop.create_task(coroutine)
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # as run_until_complete: raised
    try:
        loop.stop()
        loop.run_forever()
        if not task.done():
            return loop.run_until_complete(task)
    except BaseException:
        if task.done() and not task.cancelled():
            task.exception()  # the caller gets it raised: not "never retrieved"
        raise
    return task.result()


def iterate_sync(iterator: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator from sync code, one item at a time."""
    if _in_running_loop():
        yield from run_sync(_collect(iterator))
        return
    loop = _loop()
    try:
        while True:
            try:
                yield loop.run_until_complete(anext(iterator))
            except StopAsyncIteration:
                return
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            loop.run_until_complete(aclose())


async def _collect(iterator: AsyncIterator[T]) -> list[T]:
    return [item async for item in iterator]
