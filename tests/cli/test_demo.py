"""``tenxgraph demo`` on the real local model, and ``threads show`` on the thread it stored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tenxgraph.cli.demo import THREAD_ID
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadKey
from tests.cli.conftest import run_cli

pytestmark = pytest.mark.local_model


def test_demo_runs_every_part_and_leaves_a_thread_threads_show_prints(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    db = tmp_path / "demo.sqlite"
    result = run_cli("demo", "--db", str(db), timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b[" not in out  # piped: plain text
    # 1. tool use with custom state: the forced call, its result, the ToolResult update
    assert "tool_choice='select_city'" in out
    assert "-> call select_city(city=" in out
    assert "<- result: City set to " in out
    assert "state update from node 'tools': selected_city = " in out
    # 2. trimming: the model saw fewer messages than the log holds
    assert "Trimming: MessageContextManager(max_messages=2)" in out
    # 3. summarizing: the summarizer ran and the agent then saw the summary
    assert "[summarizer] model sees the summary prompt" in out
    assert "[agent] model sees 4 messages: system, summary, " in out
    assert "context_summary: " in out
    # 4. resume from the file, a direct tool call, and an answer after it
    assert "loaded: selected_city=" in out
    assert "select_city(city='Porto') -> 'City set to Porto.'" in out
    assert f"tenxgraph threads show {THREAD_ID} --db {db}" in out

    thread, log = asyncio.run(_load(db))
    assert thread is not None
    assert thread.values["selected_city"] == "Porto"
    assert thread.values["context_summary"]
    window = {seq for start, end in thread.window for seq in range(start, end)}
    assert len(window) < len(log) == thread.log_length
    assert [item.message.role for item in log[:3]] == ["user", "assistant", "tool"]

    shown = run_cli("threads", "show", THREAD_ID, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "summary:" in shown.stdout
    assert "   0 . user      I want a weekend in Lisbon" in shown.stdout
    assert f"{thread.log_length - 1} * assistant" in shown.stdout
    assert "(direct call_tool, not the model)" in shown.stdout

    exported = run_cli("threads", "export", THREAD_ID, "--db", str(db))
    assert len(json.loads(exported.stdout)["messages"]) == thread.log_length


async def _load(db: Path):  # type: ignore[no-untyped-def]
    checkpointer = SqliteCheckpointer(db)
    try:
        key = ThreadKey(THREAD_ID)
        return await checkpointer.aload(key), await checkpointer.alist_messages(key)
    finally:
        await checkpointer.aclose()
