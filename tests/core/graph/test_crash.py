"""A process killed mid-run loses at most the step in flight, and no finished tool runs twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tenxgraph.storage.checkpointer import SqliteCheckpointer

WORKER = Path(__file__).with_name("_crash_worker.py")


def _ledger(path: Path) -> dict[str, object]:
    if not path.exists():
        return {}
    state = SqliteCheckpointer(path).get_state({"thread_id": "crash"})
    return state.execution_meta.tool_ledger if state is not None else {}


def test_sigkill_mid_step_then_resume(tmp_path: Path) -> None:
    env = {**os.environ, "HANG": "1"}
    child = subprocess.Popen([sys.executable, str(WORKER), str(tmp_path), "start"], env=env)
    try:
        deadline = time.monotonic() + 30
        while "q" not in _ledger(tmp_path / "crash.sqlite"):
            assert time.monotonic() < deadline, "the quick tool's result was never saved"
            assert child.poll() is None, "the worker ended on its own"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL

    env["HANG"] = "0"
    resumed = subprocess.run(
        [sys.executable, str(WORKER), str(tmp_path), "resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert resumed.stdout.split()[0] == "completed"
    assert "all done" in resumed.stdout
    assert (tmp_path / "quick.log").read_text() == "ran\n"
    state = SqliteCheckpointer(tmp_path / "crash.sqlite").get_state({"thread_id": "crash"})
    assert state is not None
    texts = [m.text() for m in state.context]
    assert texts == ["go", "", "quick done", "slow done", "all done"]


def test_a_tool_that_kills_its_process_is_not_started_a_fourth_time(tmp_path: Path) -> None:
    env = {**os.environ, "DIE": "1", "HANG": "0"}

    def worker(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(WORKER), str(tmp_path), mode],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert worker("start").returncode == -signal.SIGKILL
    for _ in range(2):  # each resume starts the call again, and dies again
        assert worker("resume").returncode == -signal.SIGKILL
    last = worker("resume")  # the call was started 3 times (max_starts): it is answered
    assert last.returncode == 0, last.stderr
    assert last.stdout.split()[0] == "completed"
    assert (tmp_path / "die.log").read_text() == "started\n" * 3
    state = SqliteCheckpointer(tmp_path / "crash.sqlite").get_state({"thread_id": "crash"})
    assert state is not None
    result = state.context[2].content[0]
    assert result.is_error
    assert "started 3 times" in result.output
    assert state.execution_meta.tool_starts == {}


async def test_two_concurrent_runs_on_one_thread_one_conflicts(tmp_path: Path) -> None:
    import asyncio

    from tenxgraph.core.graph import StateGraph
    from tenxgraph.core.state import AgentState, Message, ThreadKey
    from tenxgraph.errors import ConflictError

    gate = asyncio.Event()

    async def wait_then_reply(state: AgentState) -> Message:
        await gate.wait()
        return Message.text_message(f"reply to {state.context[-1].text()}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("reply", wait_then_reply)
    graph.set_entry_point("reply")
    checkpointer = SqliteCheckpointer(tmp_path / "race.sqlite")
    app = graph.compile(checkpointer)
    config = {"thread_id": "race"}
    await app.ainvoke(
        {"messages": [Message.text_message("seed")]}, config
    ) if gate.set() is None else None
    gate.clear()
    runs = [
        asyncio.create_task(app.ainvoke({"messages": [Message.text_message(name)]}, config))
        for name in ("A", "B")
    ]
    await asyncio.sleep(0.05)
    gate.set()
    outcomes = await asyncio.gather(*runs, return_exceptions=True)
    conflicts = [o for o in outcomes if isinstance(o, ConflictError)]
    winners = [o for o in outcomes if isinstance(o, dict)]
    assert len(conflicts) == 1
    assert len(winners) == 1
    log = [s.message.text() for s in await checkpointer.alist_messages(ThreadKey("race"))]
    winner = winners[0]["messages"][0].text()
    assert log == ["seed", "reply to seed", winner.removeprefix("reply to "), winner]
