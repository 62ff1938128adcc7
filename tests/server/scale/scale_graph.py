"""The graph the scale-out tests and bench serve: a scripted agent with one slow tool.

The model is a ``FunctionModel`` that answers from the conversation alone
(so any worker, on any attempt, answers the same): for the user message
``job-K`` it calls ``slow_step`` twice (keys ``K-0`` and ``K-1``), then says
``finished K``. The tool sleeps ``SCALE_TOOL_SECONDS`` (default 0.6) and
appends ``start``/``end`` lines with a timestamp and its process id to the
file ``SCALE_LEDGER`` names, so a test can count every run of every call.
The graph's thread lease is short (``SCALE_LEASE``, default 2 s) so a run
resumed after a crash waits little for its dead holder's lease.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from tenxgraph.core.graph import create_agent, tool
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state.message_block import ToolCallBlock

CALLS = 2


def _record(what: str, key: str) -> None:
    ledger = os.environ.get("SCALE_LEDGER")
    if ledger:
        with open(ledger, "a") as out:
            out.write(f"{what} {key} {time.time():.4f} {os.getpid()}\n")


@tool
async def slow_step(key: str) -> str:
    """One slow step of a job."""
    _record("start", key)
    await asyncio.sleep(float(os.environ.get("SCALE_TOOL_SECONDS", "0.6")))
    _record("end", key)
    return f"step {key} done"


def answer(request: Any) -> Any:
    """Call the tool ``CALLS`` times for the last user message, then finish."""
    messages = list(request.messages)
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    job = messages[last_user].text().removeprefix("job-")
    done = sum(1 for m in messages[last_user:] if m.role == "tool")
    if done < CALLS:
        key = f"{job}-{done}"
        return ToolCallBlock(id=f"call-{key}", name="slow_step", args={"key": key})
    return f"finished {job}"


agent = create_agent(FunctionModel(answer), tools=[slow_step])
graph = agent.recompile(lease_seconds=float(os.environ.get("SCALE_LEASE", "2")))
