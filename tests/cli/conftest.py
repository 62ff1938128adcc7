"""A stored thread for the ``threads`` tests, made by a real graph with test models."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import AgentState, Message, SummaryContextManager, ToolResult
from tenxgraph.core.state.message_block import ToolCallBlock
from tenxgraph.storage.checkpointer import SqliteCheckpointer

SUMMARY = "SUMMARY: the user picked Lisbon"
REPO = Path(__file__).resolve().parents[2]


class TripState(AgentState):
    selected_city: str = ""


def select_city(city: str) -> ToolResult:
    """Select the city to visit."""
    return ToolResult(message=f"City set to {city}.", state={"selected_city": city})


def summarize(request: ModelRequest) -> str:
    return SUMMARY


@pytest.fixture
def trip_db(tmp_path: Path) -> Path:
    """A SQLite file holding thread ``trip``: a tool call, a ToolResult update, a summary."""
    path = tmp_path / "trip.sqlite"
    model = ScriptedModel(
        [
            ToolCallBlock(id="c1", name="select_city", args={"city": "Lisbon"}),
            "Lisbon is selected.",
            "Try pasteis de nata.",
            "May is lovely.",
        ]
    )
    checkpointer = SqliteCheckpointer(path)
    app = create_agent(
        model,
        [select_city],
        state=TripState,
        checkpointer=checkpointer,
        context_manager=SummaryContextManager(
            FunctionModel(summarize), max_messages=4, keep_recent=2
        ),
        trim_context=True,
    )
    config = {"thread_id": "trip"}
    for text in ("Pick Lisbon", "What should I eat?", "When should I go?"):
        app.invoke({"messages": [Message.text_message(text)]}, config)
    model.assert_consumed()
    asyncio.run(checkpointer.aclose())
    return path


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The real command in a child process (plain output: stdout is a pipe)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tenxgraph.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        check=False,
    )
