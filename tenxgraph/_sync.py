"""Run a coroutine to completion from synchronous code: the one sync bridge.

Every sync entry point (``invoke``, ``stream``, ``trim_context``,
``get_state``...) is a thin wrapper over its async twin through this module,
so there is one implementation of each operation.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import threading
import types
from collections.abc import AsyncIterator, Coroutine, Generator, Iterator
from typing import Any, TypeVar

__all__ = ["iterate_sync", "run_sync"]

T = TypeVar("T")

_local = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    """Return the calling thread's private loop, created once and reused (cheap re-entry)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _local.loop = loop
        if threading.current_thread() is threading.main_thread():
            atexit.register(loop.close)  # no "unclosed event loop" warning at process exit
    return loop


def _in_running_loop() -> bool:
    return asyncio.events._get_running_loop() is not None  # no exception on the hot path


def run_sync(coroutine: Coroutine[Any, Any, T], *, task: bool = True) -> T:
    """Run ``coroutine`` and return its result.

    From plain sync code it runs on a private per-thread loop. Called from
    inside a running loop (a sync node calling ``invoke``), it runs in a
    helper thread so the caller's loop is never re-entered.

    ``task=False`` is for a coroutine whose own code needs neither a task nor
    a wait (an ``invoke`` of a graph of sync nodes, without storage, hooks or
    a context manager): it starts without one (``_direct``), a few calls
    instead of a loop turn. Should it wait after all, it goes on as a task.
    """
    if not _in_running_loop():
        return _complete(_loop(), coroutine) if task else _direct(_loop(), coroutine)
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(run_sync(coroutine, task=task))
        except BaseException as exc:
            error.append(exc)
        finally:
            _loop().close()  # the helper thread ends here; its private loop must not leak

    thread = threading.Thread(target=target, name="tenxgraph-run-sync")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


def _complete(
    loop: asyncio.AbstractEventLoop,
    coroutine: Coroutine[Any, Any, T],
    context: contextvars.Context | None = None,
) -> T:
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
    task = loop.create_task(coroutine, context=context)
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


def _direct(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` up to its end or its first wait without a task or a loop turn.

    It runs in a copy of the caller's context, with ``loop`` as the running
    loop (``asyncio.get_running_loop()`` answers as inside a task), but
    ``asyncio.current_task()`` is None: code that needs a task (``asyncio.timeout``)
    must not run before the first wait. A coroutine that waits goes on from
    there as a task on ``loop`` (``_rest``), in the same context.
    """
    context = contextvars.copy_context()
    asyncio.events._set_running_loop(loop)
    try:
        awaited = context.run(coroutine.send, None)
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        asyncio.events._set_running_loop(None)
    return _complete(loop, _rest(coroutine, awaited), context)


async def _rest(coroutine: Coroutine[Any, Any, T], awaited: Any) -> T:
    """The rest of a ``coroutine`` started by ``_direct``, which waits for ``awaited``."""
    result: T = await _resumed(coroutine, awaited)
    return result


@types.coroutine
def _resumed(coroutine: Coroutine[Any, Any, Any], awaited: Any) -> Generator[Any, Any, Any]:
    """What ``await coroutine`` does from the point where it yielded ``awaited``.

    The task sees each future ``coroutine`` waits for; what the task sends or
    throws in (a cancellation) goes on to ``coroutine``.
    """
    while True:
        try:
            sent = yield awaited
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            try:
                awaited = coroutine.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                awaited = coroutine.send(sent)
            except StopIteration as done:
                return done.value


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
