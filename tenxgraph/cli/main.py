"""The ``tenxgraph`` command: argument parsing and dispatch to one module per subcommand.

Errors print one line on stderr and exit with status 1 (2 for usage
errors, 130 for Ctrl-C); ``--debug`` shows the full traceback instead. A
closed output pipe (``tenxgraph ... | head``) ends any command quietly with
status 141 (see ``pipes``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeAlias

from tenxgraph.cli import mcp_server, media, memory, serve
from tenxgraph.cli.locations import DEFAULT_DB
from tenxgraph.cli.options import ChatOptions, check_options
from tenxgraph.cli.pipes import CLOSED_PIPE_STATUS, PipeWatch
from tenxgraph.cli.render import Console

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The whole command line."""
    parser = argparse.ArgumentParser(
        prog="tenxgraph",
        description="Build AI agents as graphs over typed, durable conversation state.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument(  # also accepted after the subcommand, where users tend to type it
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_parser_with(debug)
    )
    _add_demo(commands)
    _add_chat(commands)
    _add_threads(commands, _parser_with(debug))
    _add_run(commands)
    _add_graph(commands)
    media.add_media_commands(commands, _parser_with(debug), _location)
    memory.add_memory_commands(commands, _parser_with(debug), _location)
    serve.add_serve_command(commands)
    mcp_server.add_mcp_command(commands, _location)
    return parser


Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _add_demo(commands: Subcommands) -> None:
    demo = commands.add_parser(
        "demo", help="a tour of tenxgraph on one conversation (offline local model, < 30 s)"
    )
    demo.add_argument(
        "--db", help="SQLite file to keep the demo thread in (default: a temporary file, deleted)"
    )
    _model_options(
        demo, "local (SmolLM2-135M, default), gpt-*, claude-*, gemini-*, a .gguf path..."
    )


def _add_chat(commands: Subcommands) -> None:
    chat = commands.add_parser("chat", help="chat on a stored thread, tokens streamed")
    _model_options(
        chat,
        "model name: local (SmolLM2, default), gpt-*, claude-*, gemini-*, a .gguf path; "
        "test-echo answers with your message (a testing aid)",
    )
    chat.add_argument("--thread", help="thread id to resume (default: a new thread)")
    _location(chat)
    chat.add_argument(
        "--context",
        choices=["trim", "summary", "none"],
        default="trim",
        help="keep the last user turns (trim, default), summarize older messages, or keep all",
    )
    chat.add_argument(
        "--max-messages",
        type=int,
        help="trim: user turns kept (default 10); summary: messages before summarizing (20)",
    )
    chat.add_argument("--max-tokens", type=int, default=256, help="answer length limit")
    chat.add_argument("--system", help="system prompt")
    chat.add_argument(
        "--graph",
        metavar="MODULE:GRAPH",
        help="chat with your graph (its own model and tools) instead of the built-in agent; "
        "its pauses (tool approvals, questions) are asked here",
    )


def _add_threads(commands: Subcommands, parser_class: type[argparse.ArgumentParser]) -> None:
    threads = commands.add_parser("threads", help="list, show, export or delete stored threads")
    actions = threads.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=parser_class
    )
    listing = actions.add_parser("list", help="the threads of a user, newest first")
    _location(listing, positional=True)
    show = actions.add_parser("show", help="print a thread: state, summary, log and window")
    show.add_argument("thread", help="thread id")
    _location(show, positional=True)
    show.add_argument(
        "--timeline",
        action="store_true",
        help="as a timeline: turns, tool calls, window, summaries, checkpoints, forks",
    )
    show.add_argument(
        "--trace",
        metavar="RUN",
        help="the span tree of run RUN with durations, from the server that ran it "
        "(tenxgraph serve --traces)",
    )
    show.add_argument(
        "--url", default="http://127.0.0.1:8123", help="with --trace: the server (port 8123)"
    )
    show.add_argument(
        "--api-key", help="with --trace: the server's API key (default $TENXGRAPH_API_KEY)"
    )
    export = actions.add_parser("export", help="write a thread as JSON")
    export.add_argument("thread", help="thread id")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    _location(export, positional=True)
    media.add_thread_media_options(actions, export, _location)
    delete = actions.add_parser("delete", help="delete a thread and its history")
    delete.add_argument("thread", help="thread id")
    _location(delete, positional=True)
    delete.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="do not ask for confirmation (needed without a terminal)",
    )


def _add_run(commands: Subcommands) -> None:
    run = commands.add_parser("run", help="run a graph from your code: module:attribute")
    run.add_argument("target", help="module:attribute naming a StateGraph or CompiledGraph")
    run.add_argument("--input", required=True, help="the user message")
    run.add_argument("--thread", help="thread id (a StateGraph is then saved to --db)")
    _location(run)


def _add_graph(commands: Subcommands) -> None:
    draw = commands.add_parser("graph", help="draw a graph from your code: module:attribute")
    draw.add_argument("target", help="module:attribute naming a StateGraph or CompiledGraph")
    draw.add_argument(
        "--format",
        choices=["ascii", "mermaid", "svg", "png"],
        help="default: from the -o file's suffix, else ascii (svg/png need Graphviz dot)",
    )
    draw.add_argument("-o", "--output", help="file to write (default: stdout)")
    draw.add_argument(
        "--collapse", action="store_true", help="fold middleware hook nodes into the agent"
    )


def _model_options(parser: argparse.ArgumentParser, model_help: str) -> None:
    """``--model``, ``--provider`` and ``--base-url``, shared by the commands that run a model."""
    parser.add_argument("--model", default="local", help=model_help)
    parser.add_argument("--provider", help="provider when the name does not tell (e.g. openai)")
    parser.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://localhost:11434/v1 (Ollama)"
    )


class _Version(argparse.Action):
    """``--version``: the installed package's version, read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> NoReturn:
        sys.stdout.write(f"tenxgraph {package_version()}\n")
        parser.exit()


def package_version() -> str:
    """The version in the installed package's metadata (the source's when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tenxgraph")
    except PackageNotFoundError:
        from tenxgraph import __version__

        return f"{__version__} (not installed; version from the source)"


def _parser_with(parent: argparse.ArgumentParser) -> type[argparse.ArgumentParser]:
    """A parser class whose instances inherit ``parent``'s options (for subcommands)."""

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["parents"] = [*kwargs.get("parents", ()), parent]
            super().__init__(*args, **kwargs)

    return Parser


def _location(parser: argparse.ArgumentParser, *, positional: bool = False) -> None:
    if positional:
        parser.add_argument(
            "location", nargs="?", help="SQLite file or postgresql:// DSN (the same as --db)"
        )
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"SQLite file or postgresql:// DSN (default: ./{DEFAULT_DB})",
    )
    parser.add_argument("--user", help="tenant (user_id) of the threads (default: default)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (the console script exits with it)."""
    with PipeWatch() as pipes:
        try:
            status = _run(argv, pipes)
        except SystemExit:  # argparse after --help, --version or a usage error
            if pipes.finish():
                return CLOSED_PIPE_STATUS
            raise
        except BaseException:
            if pipes.closed():  # the error came from the closed pipe, or could not be shown
                pipes.finish()
                return CLOSED_PIPE_STATUS
            raise
        return CLOSED_PIPE_STATUS if pipes.finish() else status


def _run(argv: Sequence[str] | None, pipes: PipeWatch) -> int:
    debug = False
    try:
        args = build_parser().parse_args(argv)
        debug = args.debug
        console = Console()
        options = _start(args, console)
        if args.command == "serve":  # uvicorn runs its own event loop
            return serve.run_serve(args, console)
        import asyncio  # only now: the first output does not wait for it

        return asyncio.run(_dispatch(args, console, options))
    except KeyboardInterrupt:
        if debug:
            raise
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if pipes.closed():  # the reader went away (`tenxgraph threads show x | head`)
            return CLOSED_PIPE_STATUS
        if debug:
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        Console(sys.stderr).error(message)
        return 1


_TITLES = {
    "demo": "tenxgraph demo: what tenxgraph does around a model, in one conversation",
    "chat": "tenxgraph chat: a conversation on a stored thread, answers streamed",
}
"""The first line of the commands that run a model, printed before anything heavy loads."""


def _start(args: argparse.Namespace, console: Console) -> ChatOptions | None:
    """For ``demo`` and ``chat``: check the options, then print the command's title.

    This runs before the run loop, the model adapters and ``asyncio`` are
    imported (a few hundred milliseconds, then seconds for a local model),
    so the user sees the command start at once, and a mistyped option is
    refused before any output.
    """
    if args.command not in _TITLES:
        return None
    model = {"model": args.model, "provider": args.provider, "base_url": args.base_url}
    if args.command == "demo":
        options = ChatOptions(**model)
    else:
        options = ChatOptions(
            **model,
            thread=args.thread,
            db=args.db,
            user=args.user,
            context=args.context,
            max_messages=args.max_messages,
            max_tokens=args.max_tokens,
            graph=args.graph,
            **({"system": args.system} if args.system else {}),
        )
    check_options(options)
    console.line(_TITLES[args.command], "bold")
    return options


async def _dispatch(args: argparse.Namespace, console: Console, options: ChatOptions | None) -> int:
    if args.command == "demo" and options is not None:
        from tenxgraph.cli.demo import run_demo

        await run_demo(
            console,
            args.db,
            model=options.model,
            provider=options.provider,
            base_url=options.base_url,
        )
    elif args.command == "chat" and options is not None:
        from tenxgraph.cli.chat import chat

        await chat(options, console)
    elif args.command == "threads" and args.action == "import":
        await media.run_import(args, console)
    elif args.command == "threads":
        await _threads(args, console)
    elif args.command == "media":
        await media.run_media(args, console)
    elif args.command == "memory":
        await memory.run_memory(args, console)
    elif args.command == "mcp":
        return await mcp_server.run_mcp(args)
    elif args.command == "graph":
        from tenxgraph.cli.graph import draw_graph

        await draw_graph(
            args.target,
            output_format=args.format,
            output=args.output,
            collapse_middleware=args.collapse,
            console=console,
        )
    elif args.command == "run":
        from tenxgraph.cli.run import run_graph

        await run_graph(
            args.target,
            args.input,
            thread_id=args.thread,
            user_id=args.user,
            db=args.db,
            console=console,
        )
    return 0


async def _threads(args: argparse.Namespace, console: Console) -> None:
    import asyncio

    from tenxgraph.cli import threads
    from tenxgraph.cli.locations import open_checkpointer
    from tenxgraph.core.state.ids import DEFAULT_USER, ThreadKey

    if args.action == "show" and args.trace:
        from tenxgraph.cli.trace import fetch_trace, print_trace

        key = args.api_key or os.environ.get("TENXGRAPH_API_KEY")
        print_trace(await fetch_trace(args.url, key, args.thread, args.trace), console)
        return
    user = DEFAULT_USER if args.user is None else args.user
    async with open_checkpointer(args.location or args.db, create=False) as checkpointer:
        if args.action == "list":
            await threads.list_threads(checkpointer, user, console)
            return
        key = ThreadKey(args.thread, user)
        if args.action == "show" and args.timeline:
            await threads.show_timeline(checkpointer, key, console)
        elif args.action == "show":
            await threads.show_thread(checkpointer, key, console)
        elif args.action == "export":
            exported = await threads.export_thread(checkpointer, key)
            if args.with_media:
                async with media.open_media_store(args.location or args.db, args.media) as store:
                    exported["media"] = await media.bundle_media(store, key, exported["messages"])
            data = json.dumps(exported, indent=2)
            if args.output:
                await asyncio.to_thread(Path(args.output).write_text, data + "\n", "utf-8")
                console.note(f"wrote thread {key.thread_id} to {args.output}")
            else:
                console.stream.write(data + "\n")
        elif await threads.confirm_delete(checkpointer, key, console, assume_yes=args.yes):
            released = await media.delete_with_media(checkpointer, key, args.location or args.db)
            gone = f" and {released} media only it used" if released else ""
            console.line(f"deleted thread {key.thread_id}{gone}")
        else:
            console.line(f"kept thread {key.thread_id}")


if __name__ == "__main__":
    sys.exit(main())
