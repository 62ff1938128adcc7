"""The sync bridge (``tenxgraph._sync.run_sync``): one loop turn for a coroutine that never
waits, and everything ``run_until_complete`` gave callers kept: the task, its copied
context, timeouts, exceptions, KeyboardInterrupt, the helper thread inside a running loop.
With ``task=False`` a coroutine starts without a task or a loop turn, in a copied context
with the loop running; one that waits after all goes on as a task, as if it had been one."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import threading

import pytest

from tenxgraph._sync import run_sync

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("sync_bridge_test", default="outside")


async def answer(value: int) -> int:
    return value


async def in_task() -> tuple[bool, str]:
    """Whether the coroutine runs in a task, and the context variable it sees after setting it."""
    VAR.set("inside")
    return asyncio.current_task() is not None, VAR.get()


async def waits(seconds: float) -> str:
    await asyncio.sleep(seconds)
    await asyncio.sleep(0)
    return "waited"


async def times_out() -> None:
    await asyncio.wait_for(asyncio.sleep(10), timeout=0.01)


async def fails() -> None:
    raise ValueError("boom")


async def interrupted(after_wait: bool) -> None:
    if after_wait:
        await asyncio.sleep(0)
    raise KeyboardInterrupt


def test_a_coroutine_that_never_waits_runs_in_a_task_with_its_own_context() -> None:
    assert run_sync(answer(7)) == 7
    assert run_sync(in_task()) == (True, "inside")
    assert VAR.get() == "outside"  # the task ran in a copy of the caller's context


def test_a_coroutine_that_waits_runs_to_its_end() -> None:
    assert run_sync(waits(0.01)) == "waited"
    assert run_sync(answer(1)) == 1  # the loop is fine for the next call


def test_timeouts_work_inside_the_bridge() -> None:
    with pytest.raises(TimeoutError):
        run_sync(times_out())
    assert run_sync(answer(2)) == 2


def test_an_exception_is_raised_once_and_not_logged_as_never_retrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        with pytest.raises(ValueError, match="boom"):
            run_sync(fails())
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


@pytest.mark.parametrize("after_wait", [False, True])
def test_keyboard_interrupt_reaches_the_caller_and_the_loop_still_works(
    after_wait: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        with pytest.raises(KeyboardInterrupt):
            run_sync(interrupted(after_wait))
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert run_sync(waits(0)) == "waited"
    assert run_sync(answer(3)) == 3


def test_inside_a_running_loop_it_runs_in_a_helper_thread() -> None:
    async def caller() -> tuple[int, str]:
        outer = threading.get_ident()
        result = run_sync(answer(4))

        async def where() -> int:
            return threading.get_ident()

        return result, "other" if run_sync(where()) != outer else "same"

    assert asyncio.run(caller()) == (4, "other")


async def without_task() -> tuple[bool, bool, str]:
    """Whether there is a task, whether the running loop answers, and the context variable."""
    VAR.set("direct")
    loop = asyncio.get_running_loop()
    return asyncio.current_task() is not None, loop is not None, VAR.get()


async def waits_then_checks() -> tuple[bool, str]:
    VAR.set("before the wait")
    await asyncio.sleep(0.01)
    async with asyncio.timeout(5):  # needs a task: it is one after the first wait
        await asyncio.sleep(0)
    return asyncio.current_task() is not None, VAR.get()


async def fails_after_wait() -> None:
    await asyncio.sleep(0)
    raise ValueError("late boom")


async def cancelled_while_waiting() -> str:
    await asyncio.sleep(0)
    try:
        async with asyncio.timeout(0.01):  # cancels the task: thrown into the coroutine
            await asyncio.sleep(10)
    except TimeoutError:
        return "timed out"
    return "not cancelled"


async def cancelled_at_a_bare_yield() -> str:
    await asyncio.sleep(0)
    task = asyncio.current_task()
    assert task is not None
    task.cancel()  # the task throws CancelledError in at its next step
    try:
        await asyncio.sleep(0)
    except asyncio.CancelledError:
        task.uncancel()
        return "cancelled"
    return "not cancelled"


def test_without_a_task_a_coroutine_runs_in_its_own_context_with_the_loop_running() -> None:
    assert run_sync(without_task(), task=False) == (False, True, "direct")
    assert VAR.get() == "outside"  # it ran in a copy of the caller's context
    assert asyncio.events._get_running_loop() is None  # and the loop is not left running


def test_without_a_task_a_coroutine_that_waits_goes_on_as_a_task() -> None:
    assert run_sync(waits_then_checks(), task=False) == (True, "before the wait")
    assert VAR.get() == "outside"
    assert run_sync(cancelled_while_waiting(), task=False) == "timed out"
    assert run_sync(cancelled_at_a_bare_yield(), task=False) == "cancelled"  # throw() goes on
    with pytest.raises(ValueError, match="late boom"):
        run_sync(fails_after_wait(), task=False)
    with pytest.raises(ValueError, match="boom"):
        run_sync(fails(), task=False)
    assert run_sync(answer(5), task=False) == 5


@pytest.mark.parametrize("after_wait", [False, True])
def test_without_a_task_keyboard_interrupt_reaches_the_caller(after_wait: bool) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_sync(interrupted(after_wait), task=False)
    assert asyncio.events._get_running_loop() is None
    assert run_sync(waits(0), task=False) == "waited"


def test_without_a_task_inside_a_running_loop_it_still_runs_in_a_helper_thread() -> None:
    async def caller() -> tuple[bool, bool, str]:
        return run_sync(without_task(), task=False)

    assert asyncio.run(caller()) == (False, True, "direct")
