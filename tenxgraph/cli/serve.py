"""``tenxgraph serve module:graph``: the HTTP API over a graph, run by uvicorn.

The options become ``TENXGRAPH_SERVE_*`` environment variables (see
``tenxgraph.server._from_env``), which is how uvicorn's worker processes
(``--workers N``) learn them; the app is built once here first, so a bad
option or graph fails with one clear line before anything listens.

Auth: API keys (``--api-key KEY=USER``, repeatable; ``--api-keys-file``;
or ``TENXGRAPH_API_KEYS``). Without keys everyone is the user
``default``, which is allowed only on a loopback address (the default
``127.0.0.1``) unless ``--allow-no-auth`` says so.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tenxgraph.cli.errors import CliError
from tenxgraph.server import KEEP_ALIVE_SECONDS

if TYPE_CHECKING:
    from tenxgraph.cli.render import Console

__all__ = ["add_serve_command", "run_serve"]

DEFAULT_PORT = 8123
"""The port LangGraph's own server uses, so clients' defaults point here."""


def add_serve_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tenxgraph serve``."""
    serve = commands.add_parser(
        "serve", help="serve a graph over HTTP (LangGraph-compatible API; needs the server extra)"
    )
    serve.add_argument(
        "target", help="module:graph (a StateGraph, CompiledGraph or a function returning one)"
    )
    serve.add_argument("--db", help="SQLite file for threads (default tenxgraph.sqlite)")
    serve.add_argument("--postgres", metavar="DSN", help="Postgres for threads instead of --db")
    serve.add_argument(
        "--redis", metavar="URL", help="Redis: thread cache, run streams shared by the workers"
    )
    serve.add_argument(
        "--memory", action="store_true", help="serve /store (long-term memory) next to the threads"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (1)")
    serve.add_argument("--graph-id", help="the graph's and assistant's id (default: agent)")
    serve.add_argument(
        "--api-key", action="append", default=[], metavar="KEY=USER", help="an API key and its user"
    )
    serve.add_argument("--api-keys-file", metavar="PATH", help="KEY=USER lines")
    serve.add_argument(
        "--allow-no-auth", action="store_true", help="serve without keys on a non-loopback address"
    )
    serve.add_argument(
        "--cors-origin", action="append", default=[], metavar="ORIGIN", help="allow browser calls"
    )
    serve.add_argument("--max-body-bytes", type=int, help="request body limit (10 MiB)")
    serve.add_argument(
        "--consumers", type=int, help="with --postgres: queued runs a worker runs at once (100)"
    )
    serve.add_argument(
        "--run-lease", type=float, metavar="SECONDS", help="with --postgres: run lease (15)"
    )
    serve.add_argument(
        "--keep-alive",
        type=int,
        default=KEEP_ALIVE_SECONDS,
        metavar="SECONDS",
        help=f"how long an idle connection stays open ({KEEP_ALIVE_SECONDS})",
    )
    serve.add_argument("--log-json", action="store_true", help="log lines as JSON with run ids")
    serve.add_argument(
        "--traces",
        type=int,
        metavar="N",
        help="keep the spans of the last N runs' traces for `threads show --trace` and the web "
        "page (needs opentelemetry-sdk; default: only when OpenTelemetry is set up)",
    )
    serve.add_argument(
        "--reload",
        action="store_true",
        help="restart when a .py file of the project changes (development, one worker)",
    )


def serve_environ(args: argparse.Namespace) -> dict[str, str]:
    """The ``TENXGRAPH_SERVE_*`` variables for ``args`` (checked; ``CliError`` when wrong)."""
    if args.db and args.postgres:
        raise CliError("give --db or --postgres, not both")
    if args.redis and not args.postgres:
        raise CliError("--redis needs --postgres (the Redis cache sits in front of Postgres)")
    if not 0 < args.port < 65536:
        raise CliError(f"--port must be 1-65535, got {args.port}")
    if args.workers < 1:
        raise CliError(f"--workers must be at least 1, got {args.workers}")
    if args.reload and args.workers > 1:
        raise CliError("--reload runs one worker process; drop --workers")
    if args.max_body_bytes is not None and args.max_body_bytes <= 0:
        raise CliError(f"--max-body-bytes must be positive, got {args.max_body_bytes}")
    if args.traces is not None and args.traces < 0:
        raise CliError(f"--traces must be 0 or more, got {args.traces}")
    for flag, value in (
        ("--consumers", args.consumers),
        ("--run-lease", args.run_lease),
        ("--keep-alive", args.keep_alive),
    ):
        if value is not None and not value > 0:
            raise CliError(f"{flag} must be positive, got {value}")
    env = {
        "TENXGRAPH_SERVE_GRAPH": args.target,
        "TENXGRAPH_SERVE_DB": args.db or "",
        "TENXGRAPH_SERVE_POSTGRES": args.postgres or "",
        "TENXGRAPH_SERVE_REDIS": args.redis or "",
        "TENXGRAPH_SERVE_MEMORY": "1" if args.memory else "",
        "TENXGRAPH_SERVE_GRAPH_ID": args.graph_id or "",
        "TENXGRAPH_SERVE_CORS": ",".join(args.cors_origin),
        "TENXGRAPH_SERVE_MAX_BODY": str(args.max_body_bytes or ""),
    }
    given = {"CONSUMERS": args.consumers, "RUN_LEASE": args.run_lease}
    given["LOG_FORMAT"] = "json" if args.log_json else None
    given["TRACES"] = args.traces
    env.update({f"TENXGRAPH_SERVE_{k}": str(v) for k, v in given.items() if v is not None})
    keys = _keys(args)
    if keys:
        env["TENXGRAPH_API_KEYS"] = keys
    elif args.allow_no_auth or _loopback(args.host):
        env["TENXGRAPH_SERVE_NO_AUTH"] = "1"
    else:
        raise CliError(
            f"no API keys for a server on {args.host}, which others can reach: give "
            "--api-key KEY=USER (or --api-keys-file, TENXGRAPH_API_KEYS), or --allow-no-auth"
        )
    return env


def reload_dirs(target: str) -> list[str]:
    """Where ``--reload`` watches: the working directory and the served module's package.

    The module was imported by the first build of the app, so its file is
    known; a module installed elsewhere (a package in site-packages) is
    watched too, since it is the code being developed.
    """
    dirs = [os.getcwd()]
    module = sys.modules.get(target.partition(":")[0])
    path = getattr(module, "__file__", None)
    if path:
        root = Path(path).resolve().parent
        while (root / "__init__.py").exists() and (root.parent / "__init__.py").exists():
            root = root.parent
        if str(root) not in dirs:
            dirs.append(str(root))
    return dirs


def _keys(args: argparse.Namespace) -> str:
    entries = list(args.api_key)
    if args.api_keys_file:
        try:
            entries.append(Path(args.api_keys_file).read_text())
        except OSError as exc:
            raise CliError(f"cannot read --api-keys-file: {exc}") from None
    if not entries:
        return os.environ.get("TENXGRAPH_API_KEYS", "").strip()
    return "\n".join(entries)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_serve(args: argparse.Namespace, console: Console) -> int:
    """Check the options, build the app once, then run uvicorn until Ctrl-C."""
    env = serve_environ(args)
    try:
        import uvicorn

        from tenxgraph.runs import DRAIN_SECONDS
        from tenxgraph.server.app import app_from_env
    except ImportError as exc:
        raise CliError(
            f"tenxgraph serve needs the server extra: pip install 'tenxgraph[server]' ({exc})"
        ) from None
    app = app_from_env({**os.environ, **env})  # a bad graph or option fails here, once
    context = app.state.context
    auth = "API keys" if env.get("TENXGRAPH_API_KEYS") else "none (everyone is 'default')"
    console.line(
        f"tenxgraph serve: {args.target} as {context.graph_id!r} on http://{args.host}:{args.port}"
        f" (auth: {auth}; {args.workers} worker(s))",
        "bold",
    )
    served = {  # every way of running shares these
        "host": args.host,
        "port": args.port,
        "log_level": "info",
        "timeout_graceful_shutdown": int(DRAIN_SECONDS),
        "timeout_keep_alive": args.keep_alive,
    }
    if args.reload:
        os.environ.update(env)
        uvicorn.run(
            "tenxgraph.server.app:app_from_env",
            factory=True,
            reload=True,
            reload_dirs=reload_dirs(args.target),
            **served,
        )
        return 0
    if args.workers == 1:
        uvicorn.run(app, **served)
        return 0
    os.environ.update(env)
    uvicorn.run("tenxgraph.server.app:app_from_env", factory=True, workers=args.workers, **served)
    return 0
