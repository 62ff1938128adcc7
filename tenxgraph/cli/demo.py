"""``tenxgraph demo``: what tenxgraph does around a model, shown on one short conversation.

By default the model is SmolLM2-135M run offline by llama.cpp, at temperature
0; ``--model``, ``--provider`` and ``--base-url`` point the same demo at any
model ``tenxgraph chat`` accepts. One thread goes through five parts:

1. a tool sets a field of a typed custom state (``ToolResult.state``);
2. trimming moves the context window; a tool call leaves it with its result;
3. application code calls a tool directly, recorded in the thread;
4. a summary replaces the older part of the window, and the cut moves back
   rather than split the direct call from its result. The summary is
   structured output (the JSON schema of ``TripNotes``): that is what makes
   even a 135M model keep the user's name and the city; asked for prose, it
   continues the transcript instead of summarizing it;
5. a new checkpointer and graph load the thread from the SQLite file.

Every model call prints what the model was sent, and an answer cut at
``max_tokens`` ends with a visible marker. Without ``--db`` the database
lives in a temporary directory that is deleted at the end.
"""

from __future__ import annotations

import contextlib
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from tenxgraph.cli.locations import open_checkpointer
from tenxgraph.cli.models import LOCAL, chat_model, close_model
from tenxgraph.cli.options import ChatOptions, check_options
from tenxgraph.cli.render import Console, Spinner
from tenxgraph.cli.turns import stream_turn
from tenxgraph.core.graph import Agent, CompiledGraph, StateGraph, ToolNode
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.base import BaseContextManager
from tenxgraph.core.state.context.summary import SummaryContextManager
from tenxgraph.core.state.context.trimming import MessageContextManager
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.tool_result import ToolResult
from tenxgraph.storage.checkpointer.base import Checkpointer, StoredThread
from tenxgraph.utils.constants import END, START

__all__ = [
    "ANSWER_TOKENS",
    "SUMMARY_PROMPT",
    "THREAD_ID",
    "USER_NAME",
    "ObservedModel",
    "StructuredModel",
    "TripNotes",
    "TripState",
    "build_graph",
    "cut_marker",
    "demo_model",
    "describe_request",
    "is_default_model",
    "run_demo",
    "select_city",
]

THREAD_ID = "demo-trip"
"""The demo's thread; a rerun on the same database starts it over."""
USER_NAME = "Ada"
"""The name the user gives in the first message; the summary should keep it."""
SYSTEM = (
    "You are a helpful travel assistant. Answer the user's last question in one short sentence."
)
ANSWER_TOKENS = 48
"""The longest answer; a longer one is cut there, and the demo marks the cut."""
SUMMARY_TOKENS = 96
"""The longest summary (a ``TripNotes`` object) the default model writes."""
SUMMARY_PROMPT = (
    "Summarize the conversation: the user's name, the city they chose, "
    "and the questions they asked."
)
"""The demo's summary prompt: short and explicit; the answer's form is ``TripNotes``."""
CUT_REASONS = frozenset({"length", "max_tokens"})
"""Finish reasons meaning "stopped at max_tokens" (OpenAI and llama.cpp, Anthropic, Google)."""


class TripState(AgentState):
    """The conversation plus one application field, set by a tool."""

    selected_city: str = ""
    """The city the user picked; set through ``ToolResult.state`` by ``select_city``."""


class TripNotes(BaseModel):
    """The demo's summary: the facts a later answer needs, as JSON."""

    user_name: str = Field(max_length=30)
    """The user's name, as they gave it."""
    city: str = Field(max_length=30)
    """The city the user chose."""
    questions_asked: list[Annotated[str, Field(max_length=60)]] = Field(max_length=2)
    """The user's questions, at most two (a small model fills a list up to its limit)."""


def select_city(city: str) -> ToolResult:
    """Select the city the user wants to visit.

    Args:
        city: The name of the city.
    """
    return ToolResult(message=f"{city} is now the selected city.", state={"selected_city": city})


def route(state: TripState) -> str:
    """Plan (pick a city with the tool) until a city is selected, then just answer."""
    return "answer" if state.selected_city else "plan"


def is_default_model(name: str, provider: str | None, base_url: str | None) -> bool:
    """True for the bundled SmolLM2 (no other name, provider or server given)."""
    return name == LOCAL and provider in (None, LOCAL) and base_url is None


def demo_model(
    name: str = LOCAL, provider: str | None = None, base_url: str | None = None
) -> ChatModel:
    """SmolLM2 at temperature 0 by default; any other name as ``tenxgraph chat`` builds it.

    The options are checked as ``chat`` checks them: a mistake is a ``CliError``
    naming the flags.
    """
    check_options(ChatOptions(model=name, provider=provider, base_url=base_url))
    if is_default_model(name, provider, base_url):
        from tenxgraph.core.llm.local import LocalLlamaModel

        return LocalLlamaModel(n_ctx=2048, temperature=0.0, max_tokens=SUMMARY_TOKENS)
    return chat_model(name, provider, base_url=base_url, max_tokens=SUMMARY_TOKENS)


def cut_marker(message: Message, request: ModelRequest) -> str:
    """``…[cut at N tokens]`` when ``message`` stopped at its token limit, else ``""``."""
    reason = message.metadata.get("finish_reason") or message.metadata.get("stop_reason")
    if str(reason).lower().rsplit(".", 1)[-1] not in CUT_REASONS:  # "FinishReason.MAX_TOKENS"
        return ""
    limit = request.max_tokens
    if limit is None and message.usages is not None:
        limit = message.usages.completion_tokens
    return f"…[cut at {limit} tokens]" if limit else "…[cut at the token limit]"


class ObservedModel(ChatModel):
    """Passes requests to ``inner``, printing what the model is sent and marking cut answers.

    The marker of a cut answer is streamed as one more text delta, so it shows
    where the answer stops; the stored message is the model's own. ``last``
    keeps the last request and ``last_cut`` its marker (``""`` if not cut).
    """

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
        self.last: ModelRequest | None = None
        self.last_cut = ""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """Print the request, then stream the inner model's answer (and the cut marker)."""
        self.last, self.last_cut = request, ""
        self.console.note(f"  [{self.label}] model sees {self.describe(request)}")
        with Spinner(f"{self.label}: {self.model} is writing...") as spinner:
            async for message in self.inner.stream(request):
                spinner.stop()
                if not message.delta:
                    self.last_cut = cut_marker(message, request)
                    if self.last_cut:
                        marker = Message.text_message(f" {self.last_cut}", role="assistant")
                        yield marker.model_copy(update={"delta": True})
                yield message


class StructuredModel(ChatModel):
    """Sends every request to ``inner`` with ``schema`` as its output schema (structured output)."""

    def __init__(self, inner: ChatModel, schema: type[BaseModel]) -> None:
        self.inner = inner
        self.schema = schema
        self.provider = inner.provider
        self.model = inner.model

    def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        """The inner model's stream for ``request`` with the output schema set."""
        structured = replace(
            request,
            output_schema=self.schema.model_json_schema(),
            output_schema_name=self.schema.__name__,
        )
        return self.inner.stream(structured)


def describe_request(request: ModelRequest) -> str:
    """``N messages: system, summary, user...`` plus the tool offered, if any."""
    kinds = [_kind(message) for message in request.messages]
    text = f"{len(kinds)} message{'' if len(kinds) == 1 else 's'}: {', '.join(kinds)}"
    if request.tools:
        names = ", ".join(spec.name for spec in request.tools)
        forced = " (forced)" if request.tool_choice not in ("auto", "none") else ""
        text += f" + tool {names}{forced}"
    return text


def _kind(message: Message) -> str:
    if message.metadata.get("context_summary"):
        return "summary"
    if message.tool_calls():
        return "assistant(tool call)"
    if message.role == "tool":
        return "tool(result)"
    return message.role


def describe_summary_request(request: ModelRequest) -> str:
    """The summarizer's request: the prompt, a transcript of the older messages, the schema."""
    transcript = request.messages[-1].text() if request.messages else ""
    lines = sum(1 for line in transcript.splitlines() if line.strip())
    text = f"the summary prompt + a {lines}-line transcript of the older messages"
    if request.output_schema is not None:
        text += f"; answers in the JSON schema of {request.output_schema_name}"
    return text


def build_graph(
    plan: ChatModel,
    answer: ChatModel,
    checkpointer: Checkpointer,
    manager: BaseContextManager,
) -> CompiledGraph[TripState]:
    """Plan (a forced tool call) -> tools -> answer; only answer once a city is set."""
    graph: StateGraph[TripState] = StateGraph(TripState, context_manager=manager)
    graph.add_node(
        "plan",
        Agent(plan, tools=[select_city], tool_choice="select_city", max_tokens=ANSWER_TOKENS),
    )
    graph.add_node("tools", ToolNode([select_city]))
    graph.add_node(
        "answer", Agent(answer, system_prompt=SYSTEM, trim_context=True, max_tokens=ANSWER_TOKENS)
    )
    graph.add_conditional_edges(START, route, ["plan", "answer"])
    graph.add_edge("plan", "tools")
    graph.add_edge("tools", "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer)


class _Demo:
    """The demo's models, thread and output, shared by its parts."""

    def __init__(self, model: ChatModel, location: str, console: Console) -> None:
        self.model = model
        self.location = location
        """The database: a SQLite file (or a ``postgresql://`` DSN)."""
        self.console = console
        self.config: dict[str, Any] = {"thread_id": THREAD_ID}
        self.key = ThreadKey.from_config(self.config)
        self.plan = ObservedModel(model, "plan", console)
        self.answer = ObservedModel(model, "answer", console)
        self.summarizer = ObservedModel(model, "summarizer", console, describe_summary_request)

    def graph(
        self, checkpointer: Checkpointer, manager: BaseContextManager
    ) -> CompiledGraph[TripState]:
        return build_graph(self.plan, self.answer, checkpointer, manager)

    def summarizing(self) -> SummaryContextManager:
        return SummaryContextManager(
            StructuredModel(self.summarizer, TripNotes),
            max_messages=4,
            keep_recent=2,
            summary_prompt=SUMMARY_PROMPT,
        )

    def explain(self, text: str, indent: str = "") -> None:
        """A paragraph of dim notes (``text`` is dedented, then indented by ``indent``)."""
        for line in textwrap.dedent(text).strip().splitlines():
            self.console.note(f"{indent}{line}")

    def result(self, text: str) -> None:
        """A line stating what happened (in blue on a terminal)."""
        self.console.line(f"  {text}", "blue")

    async def turn(self, app: CompiledGraph[Any], text: str) -> None:
        self.console.line()
        message = Message.text_message(text)
        self.console.message(message, prefix="  ")
        await stream_turn(
            app,
            {"messages": [message]},
            self.config,
            self.console,
            prefix="  ",
            spinner=False,
            show_updates=True,
        )

    async def stored(self, checkpointer: Checkpointer) -> StoredThread:
        """What is stored now; prints the log and the window by their seqs."""
        stored = await checkpointer.aload(self.key)
        assert stored is not None
        window = ", ".join(
            str(start) if end - start == 1 else f"{start}-{end - 1}" for start, end in stored.window
        )
        self.result(f"stored: log = seqs 0-{stored.log_length - 1}, context window = seqs {window}")
        return stored


async def run_demo(
    console: Console,
    db: str | None = None,
    model: str = LOCAL,
    provider: str | None = None,
    base_url: str | None = None,
) -> None:
    """Run the demo on ``db`` (default: a temporary file, deleted at the end)."""
    started = time.monotonic()
    chosen = demo_model(model, provider, base_url)
    try:
        with contextlib.ExitStack() as cleanup:
            if db is None:
                directory = tempfile.TemporaryDirectory(prefix="tenxgraph-demo-")
                location = str(Path(cleanup.enter_context(directory)) / "demo.sqlite")
            else:
                location = db
            demo = _Demo(chosen, location, console)
            _introduce(demo, tiny=is_default_model(model, provider, base_url), kept=db is not None)
            await _converse(demo)
            await _resume(demo)
    finally:
        await close_model(chosen)
    console.line()
    elapsed = f"done in {time.monotonic() - started:.0f} s"
    if db is None:
        console.line(f"{elapsed}; the temporary database is deleted. To keep the thread:", "bold")
        console.line("  tenxgraph demo --db demo.sqlite")
        console.line(f"  tenxgraph threads show {THREAD_ID} demo.sqlite")
    else:
        console.line(f"{elapsed}. The thread is kept; look at it with:", "bold")
        console.line(f"  tenxgraph threads show {THREAD_ID} --db {location}")


def _introduce(demo: _Demo, *, tiny: bool, kept: bool) -> None:
    console, model = demo.console, demo.model  # the title came first (``tenxgraph.cli.main``)
    if tiny:
        console.line(f"model: {model.model}, run offline by llama.cpp (no API key, no network).")
        for line in (
            "This tiny model (135M parameters) writes weak answers; they are not the point here:",
            "watch what tenxgraph does around them. The same demo on a real model:",
            "  tenxgraph demo --model gpt-4o-mini      (or claude-*, gemini-*, a .gguf file)",
            "  tenxgraph demo --model llama3.2 --base-url http://localhost:11434/v1",
            "                                          (any OpenAI-compatible server)",
        ):
            console.line(line)
    else:
        console.line(f"model: {model.model} ({model.provider})")
    where = demo.location if kept else "a temporary SQLite file, deleted at the end"
    console.line(f"thread: {THREAD_ID} in {where}")


async def _converse(demo: _Demo) -> None:
    """Parts 1 to 4 on one open database: a tool, trimming, a direct call, a summary."""
    async with open_checkpointer(demo.location) as checkpointer:
        if await checkpointer.adelete_thread(demo.key):
            demo.console.note(f"(started {THREAD_ID} over: it held an earlier demo run)")
        app = demo.graph(checkpointer, MessageContextManager(max_messages=2, keep_first=True))
        _show_graph(demo, app)
        await _tool_sets_state(demo, app)
        await _trimming(demo, app, checkpointer)
        await _direct_call(demo, app)
        await _summary(demo, checkpointer)


def _show_graph(demo: _Demo, app: CompiledGraph[TripState]) -> None:
    """The graph once, as ``tenxgraph graph`` draws one for a terminal."""
    demo.console.line()
    demo.console.line("the graph (`tenxgraph graph module:graph` draws yours, also as SVG/PNG):")
    for line in app.get_graph().draw_ascii().splitlines():
        demo.console.note(f"  {line}")


async def _tool_sets_state(demo: _Demo, app: CompiledGraph[TripState]) -> None:
    demo.console.heading("1. A tool sets a field of your typed state")
    demo.explain("""
        class TripState(AgentState): selected_city: str = ''
        select_city(city) returns ToolResult(message=..., state={'selected_city': city})
        graph: START -> plan -> tools -> answer -> END; once a city is set, START -> answer.
        plan forces the call with tool_choice='select_city' (small models such as SmolLM2
        call tools only when told to); the model still writes the arguments.
    """)
    await demo.turn(app, f"Hi, I'm {USER_NAME}. I want a weekend in Lisbon. Please select it.")
    state = await app.aget_state(demo.config)
    assert state is not None
    demo.result(f"state.selected_city = {state.selected_city!r}")


async def _trimming(demo: _Demo, app: CompiledGraph[TripState], checkpointer: Checkpointer) -> None:
    demo.console.heading("2. Trimming keeps the context window short; the log keeps everything")
    demo.explain("""
        MessageContextManager(max_messages=2, keep_first=True): before each model call the
        window keeps the last 2 user turns, plus the first message (Ada's introduction).
        Cuts fall on user messages, so a tool call leaves the window with its result.
    """)
    for text in ("What food should I try there?", "What is a good month to visit?"):
        await demo.turn(app, text)
        stored = await demo.stored(checkpointer)
    window = {seq for start, end in stored.window for seq in range(start, end)}
    log = await checkpointer.alist_messages(demo.key)
    dropped = [f"{item.seq} {_kind(item.message)}" for item in log if item.seq not in window]
    state = await app.aget_state(demo.config)
    assert state is not None
    demo.result(f"left the window together: {', '.join(dropped)}")
    demo.result(f"state.selected_city is still {state.selected_city!r}: state is not the window")


async def _direct_call(demo: _Demo, app: CompiledGraph[TripState]) -> None:
    demo.console.heading("3. Your code calls a tool directly")
    demo.explain("""
        app.call_tool('select_city', {'city': 'Porto'}): no model involved. The call, its
        result and the state update are recorded in the thread like any tool call.
    """)
    result = await app.acall_tool("select_city", {"city": "Porto"}, demo.config)
    state = await app.aget_state(demo.config)
    assert state is not None
    demo.result(f"-> {result.output!r}; state.selected_city = {state.selected_city!r}")


async def _summary(demo: _Demo, checkpointer: Checkpointer) -> None:
    demo.console.heading("4. A summary replaces the older part of the window")
    demo.explain(f"""
        A new graph on the same thread summarizes instead of trimming:
        SummaryContextManager(model, max_messages=4, keep_recent=2, summary_prompt=...).
        Above 4 messages the older ones go to the model, and its answer replaces them
        (state.context_summary); the last 2 stay verbatim. The summary is structured output
        in the JSON schema of TripNotes (user_name, city, questions_asked), which keeps even
        a small model on task (asked for prose, SmolLM2 rambles). The prompt:
          {SUMMARY_PROMPT!r}
    """)
    app = demo.graph(checkpointer, demo.summarizing())
    await demo.turn(app, "Is Porto far from Lisbon?")
    stored = await demo.stored(checkpointer)
    summary = " ".join(str(stored.values.get("context_summary") or "").split())
    if not summary:
        demo.result("no summary: the summarizer's answer was unusable (see the warning)")
        return
    demo.result(f"context_summary = {summary} {demo.summarizer.last_cut}".rstrip())
    facts = {"the name": USER_NAME, "the city": "Lisbon"}
    kept = [f"{what} {fact!r}" for what, fact in facts.items() if fact in summary]
    lost = [f"{what} {fact!r}" for what, fact in facts.items() if fact not in summary]
    verdict = f"the summary kept {' and '.join(kept)}" if kept else "the summary kept no fact"
    demo.result(verdict + (f"; it lost {' and '.join(lost)}" if lost else ""))
    request = demo.answer.last
    kinds = [_kind(message) for message in request.messages] if request else []
    if kinds[1:4] == ["summary", "assistant(tool call)", "tool(result)"]:
        demo.explain(
            """
            keep_recent=2 would have split the direct call from its result, so the cut
            moved back one message: the model got both.
            """,
            indent="  ",
        )


async def _resume(demo: _Demo) -> None:
    """Part 5: everything is closed; a new checkpointer and graph load the thread."""
    demo.console.heading("5. The thread lives in the database")
    demo.explain("""
        Everything above is closed. A new SqliteCheckpointer and a newly compiled graph load
        the thread from the file, as another process would after a restart:
    """)
    async with open_checkpointer(demo.location) as checkpointer:
        app = demo.graph(checkpointer, demo.summarizing())
        state = await app.aget_state(demo.config)
        assert state is not None
        await demo.stored(checkpointer)
        demo.result(
            f"loaded TripState: selected_city={state.selected_city!r}, "
            f"{len(state.context)} messages in the window, context_summary "
            f"{'kept' if state.context_summary else 'absent'}"
        )
