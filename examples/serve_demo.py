"""A graph to serve with `tenxgraph serve` and to try in its web page, offline.

A `FunctionModel` stands in for a real model (there is no LLM here) and picks
what to do from the last user message, so every part of the page has
something to show:

- "weather in Paris": calls the local tool `get_weather`, which also sets the
  state field `last_city`;
- "ask me": calls `ask_user`, which pauses the run with an interrupt question
  that the page answers;
- "time": calls `get_browser_time`, a remote tool: the run pauses until the
  client (the page, in the browser) runs it and sends the result back;
- "think about it": an answer that takes 30 s, to try stopping a run;
- "please fail": the model raises and the run fails; retried, it answers;
- anything else: a plain streamed answer.

A context manager keeps the window (`state.context`) to the last two user
turns, so after a few turns the page shows a window shorter than the
thread's full log.

Serve it, from the repository root, and open http://127.0.0.1:8123/ (needs
the `server` extra)::

    tenxgraph serve examples.serve_demo:graph --graph-id demo --db demo.sqlite

Run it as a script for the same conversation in process.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from typing import Any

from tenxgraph.core.graph import (
    Agent,
    RemoteTool,
    StateGraph,
    Tool,
    ToolNode,
    interrupt,
    pending_remote_calls,
    remote_tool_result,
    tools_condition,
)
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.llm.testing import ModelReply
from tenxgraph.core.state import (
    AgentState,
    Message,
    MessageContextManager,
    ToolCallBlock,
    ToolResult,
)
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.utils.constants import END


class DemoState(AgentState):
    """The agent's state plus one field a tool sets, for the page's state view."""

    last_city: str = ""
    """The city of the last weather question."""


def get_weather(city: str) -> ToolResult:
    """Current weather for a city (a canned answer).

    Args:
        city: City name, e.g. "Paris".
    """
    return ToolResult(message=f"sunny and 24C in {city}", state={"last_city": city})


def ask_user(question: str) -> str:
    """Ask the person at the keyboard and wait for the answer.

    Args:
        question: What to ask.
    """
    answer = interrupt({"question": question})
    return str(answer)


browser_time = RemoteTool(
    "get_browser_time",
    "The current time and time zone of the user's browser.",
    {"type": "object", "properties": {}},
    timeout=60.0,
)
"""Declared here, run by the client: the web page registers a tool of this name."""

_FAILED: set[str | int] = set()
"""Messages "please fail" already failed on (this process only)."""

THINKING_SECONDS = 30.0
"""How long "think about it" takes."""

_CITY = re.compile(r"weather in ([A-Za-z][A-Za-z -]*)", re.IGNORECASE)


def _call(name: str, **args: str) -> ToolCallBlock:
    return ToolCallBlock(id=f"call_{uuid.uuid4().hex[:12]}", name=name, args=args)


def _after_tool(request: ModelRequest, message: Message) -> str:
    """The answer once a tool has answered: say what it returned."""
    result = message.tool_results()[-1]
    called = {block.id: block.name for past in request.messages for block in past.tool_calls()}
    name = called.get(result.call_id, "the tool")
    if name == "ask_user":
        return f"Thanks! You answered: {message.text()}"
    return f"{name} says: {message.text()}."


async def demo_model(request: ModelRequest) -> ModelReply:
    """Decide from the last message: a tool call, or a text answer."""
    last = request.messages[-1]
    if last.role == "tool":
        return _after_tool(request, last)
    text = last.text()
    if "please fail" in text.lower() and last.message_id not in _FAILED:  # then retry it
        _FAILED.add(last.message_id)
        raise RuntimeError("the demo model was asked to fail")
    if "please fail" in text.lower():
        return "This time it worked."
    if "think" in text.lower():  # a slow answer, to try the page's Stop button
        await asyncio.sleep(THINKING_SECONDS)
        return "I thought about it for a long time."
    if match := _CITY.search(text):
        return _call("get_weather", city=match.group(1).strip().title())
    if "ask me" in text.lower():
        return _call("ask_user", question="What is your favourite colour?")
    if "time" in text.lower():
        return _call("get_browser_time")
    return f"You said: {text}. Try 'weather in Paris', 'ask me' or 'what time is it?'."


TOOLS: list[Callable[..., Any] | Tool] = [get_weather, ask_user, browser_time]


def build() -> StateGraph[DemoState]:
    """The agent loop, uncompiled: `tenxgraph serve` compiles it over its own database."""
    graph = StateGraph(DemoState, context_manager=MessageContextManager(max_messages=2))
    model = FunctionModel(demo_model, model="serve-demo")
    graph.add_node("agent", Agent(model, tools=TOOLS, trim_context=True))  # the last 2 turns
    graph.add_node("tools", ToolNode(TOOLS))
    graph.set_entry_point("agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph


graph = build()
"""What `tenxgraph serve examples.serve_demo:graph` serves (a graph with remote tools
needs a checkpointer to resume from, so the command gives it one)."""


def _answer(state: Any, value: Any) -> Any:
    """What the page would send: the browser tool's result, or the person's answer."""
    calls = [entry.call for entry in pending_remote_calls(state)]  # [] for a question
    if calls:
        print("browser tools asked:", [call.name for call in calls])
        return {"tool_results": [remote_tool_result(c.id, "12:00 (Europe/Paris)") for c in calls]}
    print("interrupt:", value)
    return "green"


def main() -> None:
    """The page's conversation, in process."""
    app = build().compile(InMemoryCheckpointer())
    config = {"thread_id": "demo"}
    for text in ["hello", "weather in Paris", "ask me", "what time is it?"]:
        result = app.invoke({"messages": [Message.text_message(text)]}, config)
        while "interrupt" in result:
            answer = _answer(app.get_state(config), result["interrupt"].value)
            result = app.invoke({"resume": answer}, config)
        print(f"{text!r} -> {result['messages'][-1].text()}")
    state = app.get_state(config)
    assert state is not None
    print(f"last_city: {state.last_city}; window: {len(state.context)} messages")


if __name__ == "__main__":
    main()
