"""Build the app ``tenxgraph serve`` describes in ``TENXGRAPH_SERVE_*`` environment variables.

uvicorn starts each worker process from an import string
(``tenxgraph.server.app:app_from_env``), so the command's options travel as
environment variables and every worker builds the same app:

=================================  ================================================
``TENXGRAPH_SERVE_GRAPH``          ``module:attribute``: a StateGraph, a CompiledGraph,
                                   or a zero-argument function returning one
``TENXGRAPH_SERVE_DB``             SQLite file of the threads (default ``tenxgraph.sqlite``)
``TENXGRAPH_SERVE_POSTGRES``       Postgres DSN of the threads (instead of the file)
``TENXGRAPH_SERVE_REDIS``          Redis URL of the thread cache (with Postgres)
``TENXGRAPH_SERVE_MEMORY``         ``1``: serve ``/store`` from a memory store next to
                                   the threads (same SQLite file's ``.memory`` sibling,
                                   or the same Postgres database)
``TENXGRAPH_SERVE_GRAPH_ID``       the graph's (and assistant's) id
``TENXGRAPH_API_KEYS``             ``KEY=USER`` entries, by commas or lines
``TENXGRAPH_SERVE_NO_AUTH``        ``1``: no keys, everyone is the user ``default``
``TENXGRAPH_SERVE_CORS``           allowed origins, by commas
``TENXGRAPH_SERVE_MAX_BODY``       the request body limit in bytes
``TENXGRAPH_SERVE_MAX_MESSAGES``   a count limit of JSON bodies; so are ``_MAX_CONTENT_BLOCKS``,
                                   ``_MAX_KEYS``, ``_MAX_DEPTH`` (``create_app``'s ``max_*``)
``TENXGRAPH_SERVE_CONSUMERS``      with Postgres: queued runs (background, or left by
                                   dead workers) a worker runs at once (default 100)
``TENXGRAPH_SERVE_RUN_LEASE``      with Postgres: seconds a silent worker keeps its
                                   runs before another resumes them (default 15)
``TENXGRAPH_SERVE_STREAM_PREFIX``  with Redis: key prefix of the run streams
                                   (default ``tenxgraph:runs:``)
``TENXGRAPH_SERVE_LOG_FORMAT``     ``json``: tenxgraph's log lines as JSON, with run
                                   and thread ids (default: plain text)
``TENXGRAPH_SERVE_TRACES``         the recent traces a worker keeps for a run's
                                   ``/trace`` (``create_app``'s ``keep_traces``)
=================================  ================================================

With Postgres, runs are durable and shared by the workers (see
``tenxgraph.runs.DurableRunManager``); with Redis too, their streams can be
followed from any worker.

A CompiledGraph that has its own checkpointer is served with it (giving a
database too is an error); one without is compiled again (``recompile``),
with the same options, over the database given.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.errors import ConfigError
from tenxgraph.runs import CONSUMERS
from tenxgraph.server._limits import COUNT_LIMITS
from tenxgraph.server.auth import api_keys, no_auth, parse_api_keys
from tenxgraph.storage import checkpointer_at

if TYPE_CHECKING:
    from fastapi import FastAPI

    from tenxgraph.server._context import Authenticate
    from tenxgraph.storage.longterm.base import MemoryStore

__all__ = ["ServeSettings", "load_target", "settings_from_env"]

PREFIX = "TENXGRAPH_SERVE_"
DEFAULT_DB = "tenxgraph.sqlite"


def _env(name: str, environ: dict[str, str]) -> str | None:
    value = environ.get(PREFIX + name, "").strip()
    return value or None


def _number(name: str, environ: dict[str, str], default: Any, kind: Any) -> Any:
    text = _env(name, environ)
    try:
        value = default if text is None else kind(text)
    except ValueError:
        value = -1
    if not value > 0:
        raise ConfigError(f"{PREFIX}{name} must be a positive number, got {text!r}")
    return value


def load_target(target: str) -> CompiledGraph[Any] | StateGraph[Any]:
    """Import ``module:attribute`` (the current directory importable); call it if a factory."""
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"expected module:graph (e.g. app:graph), got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise ConfigError(f"cannot import module {module_name!r}: {exc}") from exc
        raise
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ConfigError(f"module {module_name!r} has no attribute {attribute!r}")
        found = getattr(found, part)
    if not isinstance(found, (CompiledGraph, StateGraph)) and callable(found):
        found = found()
    if not isinstance(found, (CompiledGraph, StateGraph)):
        raise ConfigError(
            f"{target} is not a StateGraph, a CompiledGraph or a function returning one "
            f"(it is {type(found).__name__})"
        )
    return found


def _memory(environ: dict[str, str]) -> MemoryStore | None:
    if _env("MEMORY", environ) != "1":
        return None
    dsn = _env("POSTGRES", environ)
    if dsn is not None:
        from tenxgraph.storage.longterm.postgres import PgMemoryStore

        return PgMemoryStore(dsn)
    from tenxgraph.storage.longterm.sqlite import SqliteMemoryStore

    return SqliteMemoryStore((_env("DB", environ) or DEFAULT_DB) + ".memory")


def _served_graph(
    target: CompiledGraph[Any] | StateGraph[Any], environ: dict[str, str]
) -> CompiledGraph[Any]:
    given = any(_env(name, environ) for name in ("DB", "POSTGRES", "REDIS"))
    if isinstance(target, CompiledGraph) and target.checkpointer is not None:
        if given:
            raise ConfigError(
                "the graph has its own checkpointer: leave out --db/--postgres, "
                "or serve a graph compiled without one"
            )
        return target
    dsn, redis = _env("POSTGRES", environ), _env("REDIS", environ)
    if dsn is None and redis is not None:
        raise ConfigError("a Redis cache needs Postgres: give --postgres DSN with --redis URL")
    if dsn is None:
        checkpointer = checkpointer_at(_env("DB", environ) or DEFAULT_DB, redis=redis)
    else:
        from tenxgraph.server._scale_out import pool_sizes

        consumers = _number("CONSUMERS", environ, CONSUMERS, int)
        checkpointer = checkpointer_at(dsn, redis=redis, pool_size=pool_sizes(consumers)[0])
    if isinstance(target, StateGraph):
        return target.compile(checkpointer)
    return target.recompile(checkpointer=checkpointer)


def authenticate_from_env(environ: dict[str, str]) -> Authenticate:
    """API keys from ``TENXGRAPH_API_KEYS``, or no auth when ``TENXGRAPH_SERVE_NO_AUTH=1``."""
    keys = environ.get("TENXGRAPH_API_KEYS", "").strip()
    if keys:
        return api_keys(parse_api_keys(keys))
    if _env("NO_AUTH", environ) == "1":
        return no_auth
    raise ConfigError("no API keys given (TENXGRAPH_API_KEYS) and no-auth not enabled")


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """What the variables describe: the graph, ``create_app``'s options, what to attach."""

    graph: CompiledGraph[Any]
    options: dict[str, Any]
    """Keyword arguments of ``create_app`` besides the graph."""
    environ: dict[str, str]

    def attach(self, app: FastAPI) -> None:
        """Close the stores with the app, and install scale-out when Postgres is given."""
        context = app.state.context
        if self.graph.checkpointer is not None:
            context.on_shutdown.append(self.graph.checkpointer.aclose)
        env = self.environ
        dsn = _env("POSTGRES", env)
        if dsn is not None:
            from tenxgraph.server._scale_out import install

            install(
                context,
                dsn,
                _env("REDIS", env),
                prefix=_env("STREAM_PREFIX", env) or "tenxgraph:runs:",
                consumers=_number("CONSUMERS", env, CONSUMERS, int),
                lease_seconds=_number("RUN_LEASE", env, 15.0, float),
            )
        memory = self.options["memory"]
        if memory is not None:
            context.on_shutdown.append(memory.aclose)


def settings_from_env(environ: dict[str, str] | None = None) -> ServeSettings:
    """Read the ``TENXGRAPH_SERVE_*`` variables (``os.environ`` by default), load the graph."""
    env = dict(os.environ if environ is None else environ)
    log_format = _env("LOG_FORMAT", env)
    if log_format not in (None, "text", "json"):
        raise ConfigError(f"{PREFIX}LOG_FORMAT must be 'json' or 'text', got {log_format!r}")
    if log_format == "json":
        from tenxgraph.server._logging import use_json_logs

        use_json_logs()
    target = _env("GRAPH", env)
    if target is None:
        raise ConfigError(f"{PREFIX}GRAPH is not set: which module:graph should be served?")
    graph = _served_graph(load_target(target), env)
    max_body = _env("MAX_BODY", env)
    options: dict[str, Any] = {
        "graph_id": _env("GRAPH_ID", env),
        "authenticate": authenticate_from_env(env),
        "memory": _memory(env),
        "cors_origins": [o.strip() for o in (_env("CORS", env) or "").split(",") if o.strip()],
    }
    if max_body is not None:
        options["max_body_bytes"] = int(max_body)
    traces = _env("TRACES", env)
    if traces is not None:
        options["keep_traces"] = 0 if traces == "0" else _number("TRACES", env, None, int)
    for option, (_, variable) in COUNT_LIMITS.items():
        if _env(variable, env) is not None:
            options[option] = _number(variable, env, None, int)
    return ServeSettings(graph, options, env)
