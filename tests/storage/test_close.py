"""close() on every backend, context managers, sync use of Postgres from many OS threads."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state import ThreadKey
from tenxgraph.errors import UsageError
from tenxgraph.storage.checkpointer import Checkpointer
from tests.storage.conftest import BACKENDS, PG_DSN, REDIS_URL, MakeCheckpointer, drop_schema

THREADS = 8
INVOKES = 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_close_is_sync_aclose_and_a_later_call_reopens(make_checkpointer: MakeCheckpointer) -> None:
    checkpointer = make_checkpointer()
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    app.invoke({"messages": [("user", "hi")]}, {"thread_id": "t"})
    checkpointer.close()
    checkpointer.close()  # twice is fine
    assert checkpointer.get_state({"thread_id": "t"}) is not None
    checkpointer.close()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_checkpointers_are_context_managers(make_checkpointer: MakeCheckpointer) -> None:
    async with make_checkpointer() as checkpointer:
        assert await checkpointer.aload(ThreadKey("t")) is None
    with make_checkpointer() as checkpointer:
        assert isinstance(checkpointer, Checkpointer)


@pytest.mark.postgres
@pytest.mark.redis
def test_sync_invoke_from_many_os_threads_on_one_postgres_checkpointer(pg_schema: str) -> None:
    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    checkpointer = PgCheckpointer(
        PG_DSN, schema=pg_schema, redis=RedisThreadCache(REDIS_URL, prefix=f"{pg_schema}:")
    )
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    done: list[int] = []
    failed: list[BaseException] = []

    def worker(number: int) -> None:
        try:
            for turn in range(INVOKES):
                config = {"thread_id": f"thread-{number}"}
                app.invoke({"messages": [("user", f"{turn}")]}, config)
                done.append(number)
        except BaseException as exc:
            failed.append(exc)
        finally:
            _close_thread_loop()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failed == []
        assert len(done) == THREADS * INVOKES
        for number in range(THREADS):
            state = app.get_state({"thread_id": f"thread-{number}"})
            assert [m.text() for m in state.context if m.role == "user"] == [
                str(turn) for turn in range(INVOKES)
            ]
    finally:
        checkpointer.close()
        asyncio.run(drop_schema(pg_schema))


def _close_thread_loop() -> None:
    """Close the calling thread's private loop (tenxgraph leaves it to be collected)."""
    from tenxgraph import _sync

    _sync._loop().close()


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.parametrize("close", [True, False])
def test_nothing_is_printed_at_exit(close: bool, tmp_path: Path, pg_schema: str) -> None:
    script = textwrap.dedent(
        f"""
        import threading
        from tenxgraph.core.graph import create_agent
        from tenxgraph.core.llm import FunctionModel
        from tenxgraph.storage.checkpointer import PgCheckpointer

        checkpointer = PgCheckpointer({PG_DSN!r}, schema={pg_schema!r}, redis={REDIS_URL!r})
        app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
        app.invoke({{"messages": [("user", "hi")]}}, {{"thread_id": "main"}})
        thread = threading.Thread(
            target=app.invoke, args=({{"messages": [("user", "hi")]}}, {{"thread_id": "other"}})
        )
        thread.start()
        thread.join()
        if {close!r}:
            checkpointer.close()
        print("done")
        """
    )
    try:
        ran = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        asyncio.run(drop_schema(pg_schema))
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "done\n", "")


@pytest.mark.postgres
async def test_a_lent_loop_runs_the_work_where_it_is_called_and_other_threads_hop_to_it(
    pg_schema: str,
) -> None:
    from tenxgraph.storage.checkpointer import PgCheckpointer

    def io_threads() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name == "tenxgraph-postgres"]

    checkpointer = PgCheckpointer(PG_DSN, schema=pg_schema)
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    try:
        assert await checkpointer.aload(ThreadKey("t")) is None  # on its own I/O thread
        assert io_threads() == ["tenxgraph-postgres"]
        await checkpointer.use_running_loop()  # closes what lived there, goes on here
        assert io_threads() == []
        await app.ainvoke({"messages": [("user", "here")]}, {"thread_id": "t"})
        states: list[Any] = []
        config = {"thread_id": "t"}
        other = threading.Thread(target=lambda: states.append(asyncio.run(app.aget_state(config))))
        other.start()  # a call from another thread's loop: it hops to this loop, which goes on
        await asyncio.to_thread(other.join)
        assert [m.text() for m in states[0].context] == ["here", "ok"]
        assert io_threads() == []
        with pytest.raises(UsageError, match="async method"):  # not a wait that never ends
            app.get_state(config)  # a sync call on the lent loop's own thread
        assert (await app.aget_state(config)).context[-1].text() == "ok"  # the store goes on
    finally:
        await checkpointer.aclose()
    assert await checkpointer.aload(ThreadKey("t")) is not None  # its own thread again
    assert io_threads() == ["tenxgraph-postgres"]
    await checkpointer.aclose()
    await drop_schema(pg_schema)
