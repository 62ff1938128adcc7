"""``tenxgraph chat``: a conversation on a stored thread, tokens printed as they stream.

The graph is one ``Agent`` node over ``AgentState``, saved after every turn,
so ``--thread ID`` resumes a conversation in a later session. Slash commands
inspect the thread while chatting. ``--graph module:graph`` chats with the
user's own graph instead (its model and tools, saved to the same database);
a run that pauses (a ``HumanApproval`` of tool calls, an ``interrupt``
question) is answered at the prompt (``tenxgraph.cli.pauses``).
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import sys
from typing import Any

from tenxgraph.cli.locations import describe_location, open_checkpointer
from tenxgraph.cli.models import LOCAL, chat_model, close_model
from tenxgraph.cli.options import ChatOptions, ContextChoice, check_options
from tenxgraph.cli.pauses import ask, settle_pauses
from tenxgraph.cli.prompt import Reader, read_line
from tenxgraph.cli.render import Console
from tenxgraph.cli.threads import list_threads, show_log, show_state, show_summary
from tenxgraph.cli.turns import stream_turn
from tenxgraph.core.graph import Agent, CompiledGraph, StateGraph
from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.base import BaseContextManager
from tenxgraph.core.state.context.summary import SummaryContextManager
from tenxgraph.core.state.context.trimming import MessageContextManager
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ModelError, NodeError, ToolError
from tenxgraph.storage.checkpointer.base import Checkpointer

__all__ = [
    "COMMANDS",
    "ChatOptions",
    "build_chat_graph",
    "chat",
    "check_options",
    "context_manager",
    "resume_command",
]

COMMANDS = {
    "/history": "the whole thread log; * marks the messages in the context window",
    "/state": "run status, state fields and the context window",
    "/summary": "the context summary (with --context summary)",
    "/threads": "the threads in the database",
    "/new": "start a new thread",
    "/quit": "leave (also /exit, Ctrl-D, or Ctrl-C at the prompt)",
    "/help": "this list",
}


def context_manager(
    choice: ContextChoice, max_messages: int | None, model: ChatModel
) -> BaseContextManager | None:
    """The manager ``--context`` names; ``max_messages`` defaults to 10 (trim) or 20 (summary)."""
    if choice == "none":
        return None
    if choice == "trim":
        return MessageContextManager(max_messages=max_messages or 10)
    limit = max_messages or 20
    return SummaryContextManager(model, max_messages=limit, keep_recent=max(2, limit // 2))


def build_chat_graph(
    model: ChatModel,
    checkpointer: Checkpointer,
    manager: BaseContextManager | None,
    system: str,
    max_tokens: int,
) -> CompiledGraph[AgentState]:
    """One Agent node, trimming (or summarizing) before each call when a manager is given."""
    graph: StateGraph[AgentState] = StateGraph(AgentState, context_manager=manager)
    graph.add_node(
        "chat",
        Agent(
            model,
            system_prompt=system,
            trim_context=manager is not None,
            max_tokens=max_tokens,
        ),
    )
    graph.set_entry_point("chat")
    return graph.compile(checkpointer)


def _forgive_cancel() -> None:
    """Ctrl-C cancelled the chat's task; undo that so the chat decides what happens next."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        task.uncancel()


async def chat(options: ChatOptions, console: Console, read: Reader = read_line) -> None:
    """Run the conversation until ``/quit`` or end of input."""
    if options.graph is not None:
        await _chat_with_graph(options, console, read)
        return
    model = chat_model(
        options.model, options.provider, base_url=options.base_url, max_tokens=options.max_tokens
    )
    manager = context_manager(options.context, options.max_messages, model)
    try:
        async with open_checkpointer(options.db) as checkpointer:
            app = build_chat_graph(model, checkpointer, manager, options.system, options.max_tokens)
            session = _Session(checkpointer, console, options.user, options.thread or _new_id())
            console.line(  # under the command's title, printed before the runtime loaded
                f"model {model.model or options.model} ({model.provider}), "
                f"database {describe_location(options.db)}",
                "bold",
            )
            console.note(f"context: {manager!r}" if manager else "context: everything (no manager)")
            await session.announce()
            console.note("type a message, or /help for commands")
            await _converse(app, session, console, read)
            await session.farewell(options)
    finally:
        await close_model(model)


async def _chat_with_graph(options: ChatOptions, console: Console, read: Reader) -> None:
    """``--graph module:graph``: the user's graph over the database; its pauses asked here."""
    from tenxgraph.cli.run import load_graph

    assert options.graph is not None
    graph = load_graph(options.graph)
    async with open_checkpointer(options.db) as checkpointer:
        app = (
            graph.compile(checkpointer)
            if isinstance(graph, StateGraph)
            else graph.recompile(checkpointer=checkpointer)
        )
        session = _Session(checkpointer, console, options.user, options.thread or _new_id())
        console.line(f"graph {options.graph}, database {describe_location(options.db)}", "bold")
        await session.announce()
        stored = await app.aget_state(session.config)
        if stored is not None and stored.execution_meta.status == "interrupted":
            console.note("the thread waits for an answer:")
            answer = await ask(stored.execution_meta.interrupt_value, console, read)
            result = await stream_turn(app, {"resume": answer}, session.config, console)
            await settle_pauses(app, result, session.config, console, read)
        console.note("type a message, or /help for commands")
        await _converse(app, session, console, read)
        await session.farewell(options)


async def _converse(
    app: CompiledGraph[Any], session: _Session, console: Console, read: Reader
) -> None:
    """Read lines until the user leaves: slash commands, or turns streamed to the console."""
    while True:
        try:
            text = (await read("you> ")).strip()
        except (EOFError, asyncio.CancelledError):  # Ctrl-D or Ctrl-C at the prompt: leave
            _forgive_cancel()
            console.line()
            return
        if not text:
            continue
        if text.startswith("/"):
            if not await session.command(text):
                return
            continue
        try:
            result = await stream_turn(
                app, {"messages": [Message.text_message(text)]}, session.config, console
            )
            await settle_pauses(app, result, session.config, console, read)
        except EOFError:  # end of input while a pause waits: the thread stays paused
            console.line()
            console.note("(the thread waits for that answer; resume it to give one)")
            return
        except (ModelError, ToolError, NodeError) as exc:
            # the failed turn is discarded whole, so the message can simply be sent again
            Console(sys.stderr).error(str(exc))
            await app.arollback(session.config)
            console.note("(the message was not kept; send it again to retry)")
        except asyncio.CancelledError:  # Ctrl-C during an answer: back to the prompt
            _forgive_cancel()
            await app.arollback(session.config)
            console.line()
            console.note("(interrupted: the turn was not kept; Ctrl-C again to leave)")


class _Session:
    """The current thread and the slash commands that inspect it."""

    def __init__(
        self, checkpointer: Checkpointer, console: Console, user: str | None, thread: str
    ) -> None:
        self.checkpointer = checkpointer
        self.console = console
        self.user = user
        self.thread = thread

    @property
    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"thread_id": self.thread}
        if self.user:
            config["user_id"] = self.user
        return config

    @property
    def key(self) -> ThreadKey:
        return ThreadKey.from_config(self.config)

    async def announce(self) -> None:
        stored = await self.checkpointer.aload(self.key)
        if stored is None:
            self.console.line(f"new thread {self.thread}")
        else:
            self.console.line(
                f"resuming thread {self.thread}: {stored.log_length} messages in the log"
            )

    async def farewell(self, options: ChatOptions) -> None:
        """On leaving: how to come back to the current thread, when it has messages."""
        stored = await self.checkpointer.aload(self.key)
        if stored is None:
            self.console.note(f"thread {self.thread} has no messages; nothing was saved")
            return
        self.console.line(
            f"thread {self.thread}: {stored.log_length} messages in "
            f"{describe_location(options.db)}. Resume it with:"
        )
        self.console.line(f"  {resume_command(options, self.thread)}")

    async def command(self, text: str) -> bool:
        """Run a slash command; False means leave."""
        name = text.split()[0].lower()
        console = self.console
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            for command, help_text in COMMANDS.items():
                console.line(f"  {command:<10} {help_text}")
        elif name == "/new":
            self.thread = _new_id()
            console.line(f"new thread {self.thread}")
        elif name == "/threads":
            await list_threads(self.checkpointer, self.key.user_id, console)
        elif name in ("/history", "/state", "/summary"):
            stored = await self.checkpointer.aload(self.key)
            if stored is None:
                console.note(f"thread {self.thread} has no messages yet")
            elif name == "/history":
                await show_log(self.checkpointer, stored, console)
            elif name == "/state":
                console.line(f"thread {self.thread}, {stored.log_length} messages in the log")
                show_state(stored, console)
            else:
                show_summary(stored, console)
        else:
            console.line(f"unknown command {name}; /help lists them", "yellow")
        return True


def _new_id() -> str:
    return f"chat-{secrets.token_hex(4)}"


def resume_command(options: ChatOptions, thread: str) -> str:
    """The ``tenxgraph chat`` command line that continues ``thread`` with the same model."""
    args = ["tenxgraph", "chat", "--thread", thread, "--db", options.db]
    if options.user:
        args += ["--user", options.user]
    if options.graph is not None:
        return shlex.join([*args, "--graph", options.graph])
    if options.model != LOCAL:
        args += ["--model", options.model]
    if options.provider:
        args += ["--provider", options.provider]
    if options.base_url:
        args += ["--base-url", options.base_url]
    return shlex.join(args)
