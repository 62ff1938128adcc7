"""The offline graph every LangGraph-client check runs against: a scripted agent with tools.

A ``FunctionModel`` answers from the last user message, so one graph covers
what the SDKs and ``useStream`` need to see:

- "tool": calls the tool ``add(2, 3)`` (which streams ``{"adding": [2, 3]}`` as
  custom data), then says "add says 5";
- "ask": calls ``ask_user``, whose ``interrupt`` pauses the run; resumed with
  a value, the answer is "you answered: <value>";
- "sleep <seconds>": sleeps first (a run to cancel, or to find busy);
- anything else: "said: <text> w0 .. w9", streamed word by word (tokens).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

from tenxgraph.core.graph import (
    Agent,
    CompiledGraph,
    StateGraph,
    ToolNode,
    get_stream_writer,
    interrupt,
    tools_condition,
)
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.llm.testing import ModelReply
from tenxgraph.core.state import AgentState, ToolCallBlock
from tenxgraph.storage.checkpointer import Checkpointer
from tenxgraph.utils.constants import END

GRAPH_ID = "agent"
WORDS = 10
_SLEEP = re.compile(r"^sleep (\d+(?:\.\d+)?)$")


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    get_stream_writer()({"adding": [a, b]})
    return a + b


def ask_user(question: str) -> str:
    """Ask the person and wait for the answer.

    Args:
        question: What to ask.
    """
    return str(interrupt({"question": question}))


def _call(name: str, **args: Any) -> ToolCallBlock:
    return ToolCallBlock(id=f"call_{uuid.uuid4().hex[:12]}", name=name, args=args)


async def _answer(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        called = {b.id: b.name for m in request.messages for b in m.tool_calls()}
        result = last.tool_results()[-1]
        if called.get(result.call_id) == "ask_user":
            return f"you answered: {last.text()}"
        return f"{called.get(result.call_id, 'tool')} says {last.text()}"
    text = last.text().strip()
    if text == "tool":
        return _call("add", a=2, b=3)
    if text == "ask":
        return _call("ask_user", question="your name?")
    if match := _SLEEP.match(text):
        await asyncio.sleep(float(match.group(1)))
        return f"slept {match.group(1)}"
    return f"said: {text} " + " ".join(f"w{i}" for i in range(WORDS))


def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """The agent loop (model node ``agent``, tool node ``tools``) over ``checkpointer``."""
    tools = [add, ask_user]
    graph = StateGraph(AgentState)
    graph.add_node("agent", Agent(FunctionModel(_answer, model="scripted"), tools=tools))
    graph.add_node("tools", ToolNode(tools))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer)
