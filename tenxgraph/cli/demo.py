"""``tenxgraph demo``: the core of tenxgraph on the real local model, offline, in under a minute.

One thread goes through four parts: a tool-using graph over a custom state
(a ``ToolResult`` sets a state field), trimming as the thread grows, then
summarizing with the local model as the summarizer, and finally a fresh
checkpointer and graph resuming the thread from the SQLite file. Every
model call prints what the model was sent.

SmolLM2 (135M) does not call tools on its own, so the first step forces
the call with ``tool_choice``; the model still writes the arguments.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from tenxgraph.cli.locations import open_checkpointer
from tenxgraph.cli.render import Console, Spinner
from tenxgraph.cli.turns import stream_turn
from tenxgraph.core.graph.agent import Agent
from tenxgraph.core.graph.builder import StateGraph
from tenxgraph.core.graph.compiled import CompiledGraph
from tenxgraph.core.graph.tool_node import ToolNode
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.base import BaseContextManager
from tenxgraph.core.state.context.summary import SummaryContextManager
from tenxgraph.core.state.context.trimming import MessageContextManager
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.tool_result import ToolResult
from tenxgraph.storage.checkpointer.base import Checkpointer, ThreadKey
from tenxgraph.utils.constants import END, START

__all__ = ["THREAD_ID", "TripState", "describe_request", "run_demo", "select_city"]

THREAD_ID = "demo-trip"
"""The demo's thread; a rerun on the same database starts it over."""
SYSTEM = "You are a travel assistant. Answer in one short sentence."
MAX_TOKENS = 40
"""Every model answer (summaries too) is at most this long, to keep the demo fast."""


class TripState(AgentState):
    """The conversation plus one application field, set by a tool."""

    selected_city: str = ""
    """The city the user picked; set through ``ToolResult.state`` by ``select_city``."""


def select_city(city: str) -> ToolResult:
    """Select the city the user wants to visit.

    Args:
        city: The name of the city.
    """
    return ToolResult(message=f"City set to {city}.", state={"selected_city": city})


def route(state: TripState) -> str:
    """Plan (pick a city with the tool) until a city is selected, then just answer."""
    return "answer" if state.selected_city else "plan"


class ObservedModel(ChatModel):
    """Passes requests to ``inner`` after printing what the model is about to see."""

    def __init__(
        self,
        inner: ChatModel,
        label: str,
        console: Console,
        describe: Callable[[ModelRequest], str] | None = None,
    ) -> None:
        self.inner = inner
        self.label = label
        self.console = console
        self.describe = describe or describe_request
        self.provider = inner.provider
        self.model = inner.model

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Print the request, then stream the inner model's answer."""
        self.console.note(f"  [{self.label}] model sees {self.describe(request)}")
        with Spinner(f"{self.label}: {self.model} is working...") as spinner:
            async for message in self.inner.stream(request):
                spinner.stop()
                yield message


def describe_request(request: ModelRequest) -> str:
    """``N messages: system, summary, user...`` plus the tools offered."""
    kinds = []
    for message in request.messages:
        if message.metadata.get("context_summary"):
            kinds.append("summary")
        elif message.tool_calls():
            kinds.append("assistant(tool call)")
        elif message.role == "tool":
            kinds.append("tool(result)")
        else:
            kinds.append(message.role)
    count = f"{len(kinds)} message{'' if len(kinds) == 1 else 's'}"
    text = f"{count}: {', '.join(kinds)}"
    if request.tools:
        names = ", ".join(spec.name for spec in request.tools)
        text += f"; tools [{names}], tool_choice={request.tool_choice!r}"
    return text


def describe_summary_request(request: ModelRequest) -> str:
    """The summarizer's request: its prompt and a transcript of the older messages."""
    transcript = request.messages[-1].text() if request.messages else ""
    lines = [line for line in transcript.splitlines() if line.strip()]
    return (
        f"the summary prompt (system) and a transcript of the older part "
        f"({len(lines)} lines, {len(transcript)} characters)"
    )


def summarizer(local: ChatModel, console: Console) -> SummaryContextManager:
    """Summarize above 4 messages, keeping the last 2 verbatim, with the local model."""
    observed = ObservedModel(local, "summarizer", console, describe_summary_request)
    return SummaryContextManager(observed, max_messages=4, keep_recent=2)


def build_graph(
    model: ChatModel, checkpointer: Checkpointer, manager: BaseContextManager
) -> CompiledGraph[TripState]:
    """Plan (a forced tool call) -> tools -> answer; only answer once a city is set."""
    graph: StateGraph[TripState] = StateGraph(TripState, context_manager=manager)
    graph.add_node(
        "plan",
        Agent(model, tools=[select_city], tool_choice="select_city", max_tokens=MAX_TOKENS),
    )
    graph.add_node("tools", ToolNode([select_city]))
    graph.add_node(
        "answer", Agent(model, system_prompt=SYSTEM, trim_context=True, max_tokens=MAX_TOKENS)
    )
    graph.add_conditional_edges(START, route, ["plan", "answer"])
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer)


def load_local_model() -> ChatModel:
    """SmolLM2 through llama.cpp; a missing ``local`` extra raises ``MissingExtraError``."""
    from tenxgraph.core.llm.local import LocalLlamaModel

    return LocalLlamaModel(n_ctx=2048, temperature=0.0, max_tokens=MAX_TOKENS)


async def run_demo(db: str | None, console: Console) -> Path:
    """Run the four parts on ``db`` (a new temporary file by default); return the file."""
    started = time.monotonic()
    local = load_local_model()
    path = Path(db) if db else Path(tempfile.mkdtemp(prefix="tenxgraph-demo-")) / "demo.sqlite"
    config = {"thread_id": THREAD_ID}
    key = ThreadKey.from_config(config)
    agent_model = ObservedModel(local, "agent", console)
    console.line(f"tenxgraph demo - {local.model} via llama.cpp, offline, no API key", "bold")
    console.note(f"database: {path}   thread: {THREAD_ID}")

    async with open_checkpointer(str(path)) as checkpointer:
        if await checkpointer.adelete_thread(key):
            console.note(f"(deleted the thread {THREAD_ID} of an earlier demo run)")

        console.heading("1. A tool-using graph with custom state")
        console.note("TripState(AgentState) adds selected_city; the tool select_city returns")
        console.note("ToolResult(message=..., state={'selected_city': city}).")
        console.note("graph: START -> plan (Agent) -> tools (ToolNode) -> answer (Agent) -> END;")
        console.note("once a city is selected, START routes straight to answer.")
        console.note(
            "SmolLM2 only calls tools when forced, so plan sets tool_choice='select_city':"
        )
        console.note("the call is forced, the model writes its arguments.")
        trimming = MessageContextManager(max_messages=2)
        app = build_graph(agent_model, checkpointer, trimming)
        await _turn(app, config, console, "I want a weekend in Lisbon. Please select it.")
        state = await app.aget_state(config)
        assert state is not None
        console.line(f"  state.selected_city = {state.selected_city!r}", "blue")

        console.heading("2. Trimming: MessageContextManager(max_messages=2)")
        console.note("answer has trim_context=True: before each model call (and when a run ends)")
        console.note("the context keeps the last 2 user turns. The log keeps everything.")
        for text in ("What food should I try there?", "What is a good month to visit?"):
            await _turn(app, config, console, text)
            await _report(checkpointer, key, console)
        console.note("the tool call left the window, but selected_city lives on in the state.")

        console.heading("3. Summarizing: SummaryContextManager(model=<local>, max_messages=4)")
        console.note("A new graph on the same database summarizes instead: above 4 messages the")
        console.note("older part goes to the local model, and its summary is injected after the")
        console.note("system prompt as an assistant message. keep_recent=2 stay verbatim.")
        app = build_graph(agent_model, checkpointer, summarizer(local, console))
        await _turn(app, config, console, "Which neighborhood should I stay in?")
        await _report(checkpointer, key, console)

    console.heading("4. Persistence: a second run resumes the thread from the file")
    console.note("Everything above is closed. A new SqliteCheckpointer and a newly compiled graph")
    console.note("load the thread from disk, as a second process would.")
    async with open_checkpointer(str(path)) as checkpointer:
        app = build_graph(agent_model, checkpointer, summarizer(local, console))
        state = await app.aget_state(config)
        assert state is not None
        console.line(
            f"  loaded: selected_city={state.selected_city!r}, {len(state.context)} messages "
            f"in the window, summary {'present' if state.context_summary else 'absent'}",
            "blue",
        )
        console.note("A direct tool call from application code (call_tool, not the model):")
        result = await app.acall_tool("select_city", {"city": "Porto"}, config)
        state = await app.aget_state(config)
        assert state is not None
        console.line(
            f"  select_city(city='Porto') -> {result.output!r}; "
            f"state.selected_city = {state.selected_city!r} (recorded in the thread)",
            "blue",
        )
        await _turn(app, config, console, "Which city is selected now?")
        await _report(checkpointer, key, console)

    console.line()
    console.line(
        f"done in {time.monotonic() - started:.1f} s. Look at the stored thread with:", "bold"
    )
    console.line(f"  tenxgraph threads show {THREAD_ID} --db {path}")
    return path


async def _turn(
    app: CompiledGraph[Any], config: dict[str, Any], console: Console, text: str
) -> None:
    console.line()
    console.message(Message.text_message(text), prefix="  ")
    await stream_turn(
        app,
        {"messages": [Message.text_message(text)]},
        config,
        console,
        prefix="  ",
        spinner=False,
        show_updates=True,
    )


async def _report(checkpointer: Checkpointer, key: ThreadKey, console: Console) -> None:
    """What is stored now: the log, the window, the summary."""
    stored = await checkpointer.aload(key)
    assert stored is not None
    window = ", ".join(f"{start}-{end - 1}" for start, end in stored.window)
    console.line(
        f"  stored: log has {stored.log_length} messages; context window = seqs {window} "
        f"({len(stored.context)} messages)",
        "blue",
    )
    summary = stored.values.get("context_summary")
    if summary:
        console.line(f"  context_summary: {' '.join(str(summary).split())}", "blue")
