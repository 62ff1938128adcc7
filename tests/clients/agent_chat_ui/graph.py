"""The graph Agent Chat UI talks to: an echo agent with a tool that asks for approval.

"send <text>": the model calls ``send_email``, whose ``interrupt`` carries
one ``HumanInterrupt`` (LangGraph's agent-inbox shape: ``action_request``,
``config`` with the ``allow_*`` flags, ``description``), which Agent Chat UI
shows with an Accept button; it resumes with ``[{"type": "accept", ...}]``
and the tool answers "sent: <text>". Anything else: "echo: <text>".
"""

from __future__ import annotations

import uuid
from typing import Any

from tenxgraph.core.graph import (
    Agent,
    CompiledGraph,
    StateGraph,
    ToolNode,
    interrupt,
    tools_condition,
)
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.llm.testing import ModelReply
from tenxgraph.core.state import AgentState, ToolCallBlock
from tenxgraph.storage.checkpointer import Checkpointer
from tenxgraph.utils.constants import END


def send_email(text: str) -> str:
    """Send an email once a person approved it.

    Args:
        text: The email's text.
    """
    request = {
        "action_request": {"action": "send_email", "args": {"text": text}},
        "config": {
            "allow_accept": True,
            "allow_edit": False,
            "allow_respond": False,
            "allow_ignore": True,
        },
        "description": f"Send the email {text!r}?",
    }
    (answer,) = interrupt([request])
    return f"sent: {text}" if answer.get("type") == "accept" else "not sent"


def _answer(request: ModelRequest) -> ModelReply:
    last = request.messages[-1]
    if last.role == "tool":
        return f"done, {last.text()}"
    text = last.text().strip()
    if text.startswith("send "):
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        return ToolCallBlock(id=call_id, name="send_email", args={"text": text[5:]})
    return f"echo: {text}"


def build(checkpointer: Checkpointer) -> CompiledGraph[Any]:
    """The agent loop (``agent``, ``tools``) over ``checkpointer``."""
    graph = StateGraph(AgentState)
    graph.add_node("agent", Agent(FunctionModel(_answer, model="scripted"), tools=[send_email]))
    graph.add_node("tools", ToolNode([send_email]))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer)
