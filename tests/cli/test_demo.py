"""``tenxgraph demo``: on the real local model, and its plumbing with the ``test-echo`` model."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.cli.demo import (
    ANSWER_TOKENS,
    THREAD_ID,
    USER_NAME,
    ObservedModel,
    TripNotes,
    build_graph,
    cut_marker,
)
from tenxgraph.cli.render import Console
from tenxgraph.cli.turns import stream_turn
from tenxgraph.core.llm import ModelRequest, ScriptedModel
from tenxgraph.core.state import Message, MessageContextManager, ThreadKey
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer
from tests.cli.conftest import REPO, run_cli

CUT = re.compile(r"…\[cut at (\d+) tokens\]")


def _env(tmp: Path) -> dict[str, str]:
    """The CLI's environment with a private temporary directory, to see what it leaves there."""
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}


def _demo(*args: str, tmp: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``tenxgraph demo ARGS`` in a child process whose temporary files go to ``tmp``."""
    return subprocess.run(
        [sys.executable, "-m", "tenxgraph.cli", "demo", *args],
        capture_output=True,
        text=True,
        env=_env(tmp),
        timeout=timeout,
        check=False,
    )


@pytest.mark.local_model
def test_demo_on_the_local_model_shows_every_part_and_keeps_the_thread_in_db(
    tmp_path: Path,
) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    db = tmp_path / "demo.sqlite"
    tmp = tmp_path / "tmp"
    result = _demo("--db", str(db), tmp=tmp, timeout=180)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b[" not in out  # piped: plain text
    assert "This tiny model (135M parameters) writes weak answers" in out
    assert "tenxgraph demo --model gpt-4o-mini" in out
    # 1. the forced tool call sets the typed state field
    assert "[plan] model sees 1 message: user + tool select_city (forced)" in out
    assert '-> call select_city(city="Lisbon")' in out
    assert "state update from node 'tools': selected_city = 'Lisbon'" in out
    # 2. trimming: the tool call and its result left the window together
    assert "left the window together: 1 assistant(tool call), 2 tool(result), 3 assistant" in out
    assert "state.selected_city is still 'Lisbon'" in out
    # 3. the direct call
    assert "-> 'Porto is now the selected city.'; state.selected_city = 'Porto'" in out
    # 4. the structured summary keeps the name and the city; the cut kept the direct call whole
    assert "answers in the JSON schema of TripNotes" in out
    assert (
        "[answer] model sees 5 messages: system, summary, assistant(tool call), tool(result)" in out
    )
    assert "the summary kept the name 'Ada' and the city 'Lisbon'" in out
    assert "cut\n  moved back one message" in out
    # 5. loaded again from the file; the closing hint points at the kept file
    assert "loaded TripState: selected_city='Porto'" in out
    assert f"tenxgraph threads show {THREAD_ID} --db {db}" in out
    assert list(tmp.iterdir()) == []

    thread, log = asyncio.run(_load(db))
    assert thread is not None
    assert thread.values["selected_city"] == "Porto"
    notes = TripNotes.model_validate_json(thread.values["context_summary"])
    assert (notes.user_name, notes.city) == (USER_NAME, "Lisbon")
    assert [item.message.role for item in log[:3]] == ["user", "assistant", "tool"]
    window = {seq for start, end in thread.window for seq in range(start, end)}
    assert len(window) < len(log) == thread.log_length
    # every answer that stopped at max_tokens, and only those, was marked as cut
    cut = [m for m in (i.message for i in log) if m.metadata.get("finish_reason") == "length"]
    assert [int(n) for n in CUT.findall(out)] == [ANSWER_TOKENS] * len(cut)
    assert all("…[cut" not in item.message.text() for item in log)  # the marker is not stored

    shown = run_cli("threads", "show", THREAD_ID, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert '"user_name": "Ada"' in shown.stdout
    assert "   0 . user      Hi, I'm Ada." in shown.stdout
    assert "(direct call_tool, not the model)" in shown.stdout
    exported = run_cli("threads", "export", THREAD_ID, "--db", str(db))
    assert len(json.loads(exported.stdout)["messages"]) == thread.log_length


def test_without_db_the_demo_deletes_its_temporary_database_and_points_at_no_file(
    tmp_path: Path,
) -> None:
    tmp = tmp_path / "tmp"
    result = _demo("--model", "test-echo", tmp=tmp)
    assert result.returncode == 0, result.stderr
    assert "thread: demo-trip in a temporary SQLite file, deleted at the end" in result.stdout
    assert "135M parameters" not in result.stdout  # only said of the default model
    assert "model: test-echo (test)" in result.stdout
    assert "the temporary database is deleted. To keep the thread:" in result.stdout
    assert "  tenxgraph demo --db demo.sqlite\n" in result.stdout
    assert str(tmp) not in result.stdout
    assert list(tmp.iterdir()) == []


def test_a_reader_that_stops_early_ends_the_demo_quietly_and_cleans_up(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    command = [sys.executable, "-m", "tenxgraph.cli", "demo", "--model", "test-echo"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp), text=True
    ) as child:  # `tenxgraph demo | head -3`
        assert child.stdout is not None and child.stderr is not None
        first = [child.stdout.readline() for _ in range(3)]
        child.stdout.close()
        errors = child.stderr.read()
        status = child.wait(timeout=60)
    assert first[0].startswith("tenxgraph demo:")
    assert status == 141, errors
    assert errors == ""
    assert list(tmp.iterdir()) == []


def test_demo_takes_the_model_options_of_chat_and_checks_them_the_same_way() -> None:
    result = run_cli("demo", "--help")
    assert result.returncode == 0
    for option in ("--db", "--model", "--provider", "--base-url"):
        assert option in result.stdout
    mistyped = run_cli("demo", "--model", "lcoal")
    assert mistyped.returncode == 1
    assert mistyped.stderr.startswith(
        "tenxgraph: error: unknown model 'lcoal': --model takes gpt-*"
    )
    assert mistyped.stdout == ""


@pytest.mark.parametrize(
    ("metadata", "marker"),
    [
        ({"finish_reason": "length"}, f"…[cut at {ANSWER_TOKENS} tokens]"),  # OpenAI, llama.cpp
        ({"stop_reason": "max_tokens"}, f"…[cut at {ANSWER_TOKENS} tokens]"),  # Anthropic
        ({"finish_reason": "FinishReason.MAX_TOKENS"}, f"…[cut at {ANSWER_TOKENS} tokens]"),
        ({"finish_reason": "stop"}, ""),
        ({"stop_reason": "end_turn"}, ""),
        ({}, ""),
    ],
)
def test_cut_marker_reads_the_finish_reason(metadata: dict[str, Any], marker: str) -> None:
    answer = Message.text_message("Lisbon is", role="assistant", metadata=metadata)
    request = ModelRequest(messages=[], max_tokens=ANSWER_TOKENS)
    assert cut_marker(answer, request) == marker


async def test_an_answer_cut_at_max_tokens_is_marked_where_it_stops_but_stored_as_is() -> None:
    cut = Message.text_message(
        "Lisbon is lovely in", role="assistant", metadata={"finish_reason": "length"}
    )
    model = ScriptedModel(
        [ToolCallBlock(id="c1", name="select_city", args={"city": "Lisbon"}), cut]
    )
    output = io.StringIO()
    console = Console(output, color=False)
    observed = ObservedModel(model, "answer", console)
    app = build_graph(observed, observed, InMemoryCheckpointer(), MessageContextManager())
    config = {"thread_id": "t"}
    await stream_turn(app, {"messages": [Message.text_message("Lisbon")]}, config, console)
    printed = output.getvalue()
    assert f"assistant Lisbon is lovely in …[cut at {ANSWER_TOKENS} tokens]\n" in printed
    assert "[answer] model sees 4 messages: system, user, assistant(tool call), tool(result)" in (
        printed
    )
    state = await app.aget_state(config)
    assert state is not None
    assert state.selected_city == "Lisbon"
    assert state.context[-1].text() == "Lisbon is lovely in"


async def _load(db: Path):  # type: ignore[no-untyped-def]
    checkpointer = SqliteCheckpointer(db)
    try:
        key = ThreadKey(THREAD_ID)
        return await checkpointer.aload(key), await checkpointer.alist_messages(key)
    finally:
        await checkpointer.aclose()
