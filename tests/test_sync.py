"""The sync bridge (``tenxgraph._sync.run_sync``): one loop turn for a coroutine that never
waits, and everything ``run_until_complete`` gave callers kept: the task, its copied
context, timeouts, exceptions, KeyboardInterrupt, the helper thread inside a running loop."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import subprocess
import sys
import textwrap
import threading

import pytest

from tenxgraph._sync import CLOSE_SECONDS, _close, run_sync

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


LEAVES_WORK = textwrap.dedent(
    """
    import asyncio
    from tenxgraph._sync import run_sync

    async def cleanup():
        await asyncio.sleep(0.05)
        print("cleaned up", flush=True)

    async def run():
        asyncio.get_running_loop().create_task(cleanup())  # left behind, as an SDK's close is
        return "answered"

    print(run_sync(run()), flush=True)
    """
)


def test_work_left_on_the_private_loop_finishes_before_the_process_exits() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LEAVES_WORK], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["answered", "cleaned", "up"]
    assert "Task was destroyed" not in done.stderr


def test_work_that_never_ends_is_cancelled_when_the_loop_closes() -> None:
    loop = asyncio.new_event_loop()
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("nobody waits for this")

    left = [loop.create_task(forever()), loop.create_task(fails_later())]
    _close(loop)
    assert loop.is_closed()
    assert cancelled == [True]
    assert [task.done() for task in left] == [True, True]
    assert CLOSE_SECONDS <= 1.0


def test_a_helper_thread_closes_its_loop_after_the_work_it_left() -> None:
    finished: list[str] = []

    async def cleanup() -> None:
        await asyncio.sleep(0.01)
        finished.append("cleaned up")

    async def leaves_work() -> str:
        asyncio.get_running_loop().create_task(cleanup())
        return "answered"

    async def caller() -> str:
        return run_sync(leaves_work())

    assert asyncio.run(caller()) == "answered"
    assert finished == ["cleaned up"]
