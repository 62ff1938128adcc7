"""Routes: LangGraph's thread-streaming protocol (the SDKs' ``threads.stream``), over runs.

The protocol (``@langchain/protocol``) is thread-centric: commands posted to
``POST /threads/{id}/commands`` (``{"id", "method", "params"}``, answered
``{"type": "success", "id", "result"}`` or ``{"type": "error", "id",
"error", "message"}``) and filtered event streams opened with ``POST
/threads/{id}/stream/events`` (``{"channels", "namespaces", "depth",
"since"}``). It is a translation here, owning nothing: ``run.start``,
``input.respond`` and ``state.fork`` start runs as ``POST
/threads/{id}/runs`` does (the run registry runs them), the state commands
read the thread as the thread routes do, and an event stream follows the
thread's runs as ``GET /threads/{id}/stream`` does, each run's logged events
translated into the protocol's envelope (``_protocol_events``).

An event stream starts at the thread's newest run (the one a ``run.start``
just made, even if it already ended, so a client that subscribes after
starting sees it whole), then follows each run started after it, until the
client closes it. ``seq`` numbers the events of one connection from 1
(``since`` skips those up to it); ``event_id`` is the same on every
connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any, cast

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import EventsLostError, StateError, TenxGraphError
from tenxgraph.runs import RunRecord, RunRegistry
from tenxgraph.server import _shapes as shapes
from tenxgraph.server import _thread_queries as queries
from tenxgraph.server._context import Context, ServerContext, User, thread_config
from tenxgraph.server._event_log import EventLog
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._message_format import langchain_json
from tenxgraph.server._protocol_events import CHANNELS, RunTranslator, channel_of
from tenxgraph.server._run_request import RunRequest
from tenxgraph.server._run_stream import StreamEncoder
from tenxgraph.server._sse import EventStreamResponse, comment
from tenxgraph.server.http_errors import bad_request, error_detail
from tenxgraph.server.runs import PING_SECONDS, _start, manager_of
from tenxgraph.server.thread_stream import follow_runs
from tenxgraph.server.threads import thread_info_or_404, version_of

__all__ = ["PROTOCOL_MODES", "router"]

router = APIRouter(tags=["threads"], route_class=CheckedJsonRoute)

PROTOCOL_MODES = ("values", "updates", "messages-tuple")
"""The stream modes of a run the protocol starts: what its channels are made from."""
_KEPT_RUNS = 1000


class Refused(StateError):
    """A command the server answers with the protocol's ``ErrorResponse`` of ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ProtocolCommand(BaseModel):
    """``POST /threads/{id}/commands``: one command of the protocol."""

    model_config = ConfigDict(extra="allow")

    id: int = Field(ge=0)
    method: str
    params: dict[str, Any] = Field(default_factory=dict)


class EventStreamRequest(BaseModel):
    """``POST /threads/{id}/stream/events``: which events the connection carries."""

    model_config = ConfigDict(extra="allow")

    channels: list[str] = Field(min_length=1)
    namespaces: list[list[str]] | None = None
    depth: int | None = Field(default=None, ge=0)
    since: int | None = Field(default=None, ge=0)

    def wants(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` (always of the root namespace here) passes the filter."""
        if channel_of(event["method"]) not in self.channels:
            return False
        return self.namespaces is None or [] in self.namespaces or not self.namespaces


# --- commands ------------------------------------------------------------------------------


@router.post("/threads/{thread_id}/commands")
async def command(
    thread_id: str, body: ProtocolCommand, context: Context, user: User
) -> dict[str, Any]:
    """Run one protocol command on the thread; its answer, or the protocol's error answer.

    An error is answered 200 with ``{"type": "error", "error": code, "message"}``,
    as the protocol's clients read it (``ProtocolError`` with its code).
    """
    handler = _HANDLERS.get(body.method)
    try:
        if handler is None:
            code = "not_supported" if body.method in _REFUSED else "unknown_command"
            raise Refused(code, _unknown(body.method))
        result = await handler(context, user, thread_id, body.params)
    except Refused as exc:
        return _error(body.id, exc.code, str(exc))
    except HTTPException as exc:
        return _error(body.id, _code(exc.status_code, str(exc.detail)), str(exc.detail))
    except ValidationError as exc:
        return _error(body.id, "invalid_argument", _validation_message(exc))
    except TenxGraphError as exc:
        status, detail = error_detail(exc)
        if status >= 500:
            raise
        return _error(body.id, _code(status, detail), detail)
    return {"type": "success", "id": body.id, "result": result}


def _code(status: int, detail: str) -> str:
    """The protocol's error code for an HTTP answer of the run and thread routes."""
    if status == 404 and "checkpoint" in detail:
        return "no_such_checkpoint"
    return "invalid_argument"  # a missing thread, a bad input, a busy thread (the message says)


def _error(command_id: int, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "id": command_id, "error": code, "message": message}


def _validation_message(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg"))


def _unknown(method: str) -> str:
    if method in _REFUSED:
        return f"{method} is not supported by this server: {_REFUSED[method]}"
    return f"unknown command {method[:80]!r}; known: {sorted(_HANDLERS)}"


_REFUSED = {
    "input.inject": "a run takes its input when it starts; send it with the next run.start",
    "subscription.subscribe": "open an event stream: POST /threads/{id}/stream/events",
    "subscription.unsubscribe": "close the event stream's connection",
    "subscription.reconnect": "open the event stream again with 'since'",
}


async def _start_run(
    context: ServerContext, user: str, thread_id: str, fields: dict[str, Any]
) -> RunRecord:
    """A background run on the thread (created if missing), streaming what the channels need."""
    fields = {k: v for k, v in fields.items() if v is not None}
    request = RunRequest.model_validate(
        {
            "assistant_id": context.graph_id,
            "if_not_exists": "create",
            "stream_mode": list(PROTOCOL_MODES),
            **fields,
        }
    )
    return await _start(context, user, request, thread_id, background=True)


def _params(params: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: params.get(name) for name in names}


async def _run_start(
    context: ServerContext, user: str, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    fields = _params(params, "assistant_id", "config", "metadata", "context")  # a preset too
    fields["multitask_strategy"] = params.get("multitask_strategy", params.get("multitaskStrategy"))
    if await _paused(context, user, thread_id):  # the protocol: the input answers the pause
        fields["command"] = {"resume": params.get("input")}
    else:
        fields["input"] = params.get("input")
    record = await _start_run(context, user, thread_id, fields)
    return {"run_id": record.run_id}


async def _paused(context: ServerContext, user: str, thread_id: str) -> bool:
    """Whether the thread waits at an interrupt, with no run of its own going."""
    if await manager_of(context).thread_busy(user, thread_id):
        return False
    key = ThreadKey(thread_id, user)  # an id storage cannot key by is refused here
    state = await context.graph.aget_state(thread_config(key.thread_id, key.user_id))
    return state is not None and bool(shapes.interrupts_json(thread_id, state))


async def _input_respond(
    context: ServerContext, user: str, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    responses = params.get("responses")
    if responses is not None:
        if not isinstance(responses, list) or len(responses) != 1:
            raise Refused(
                "not_supported",
                "a tenxgraph thread pauses at one interrupt at a time: respond to it alone",
            )
        answer = responses[0] if isinstance(responses[0], dict) else {}
    else:
        answer = params
    await _check_interrupt(context, user, thread_id, str(answer.get("interrupt_id", "")))
    command = {"resume": answer.get("response"), "update": params.get("update")}
    command["goto"] = params.get("goto")
    fields = _params(params, "config", "metadata")
    await _start_run(context, user, thread_id, {**fields, "command": command})
    return {}


async def _check_interrupt(
    context: ServerContext, user: str, thread_id: str, interrupt_id: str
) -> None:
    await thread_info_or_404(context, thread_id, user)
    state = await context.graph.aget_state(thread_config(thread_id, user))
    pending = [] if state is None else shapes.interrupts_json(thread_id, state)
    if interrupt_id not in {item["id"] for item in pending}:
        raise Refused(
            "no_such_interrupt",
            f"the thread is not paused at interrupt {interrupt_id[:80]!r}"
            + (f"; it waits at {pending[0]['id']!r}" if pending else "; it waits at none"),
        )


async def _state_get(
    context: ServerContext, user: str, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    states = await _states(context, user, thread_id, limit=1, before=None)
    values = states[0]["values"] if states else {}
    keys = params.get("keys")
    if isinstance(keys, list):
        values = {k: v for k, v in values.items() if k in keys}
    result: dict[str, Any] = {"values": values}
    if states:
        result["checkpoint"] = {"id": states[0]["checkpoint"]["checkpoint_id"]}
    return result


async def _list_checkpoints(
    context: ServerContext, user: str, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    limit = params.get("limit", 10)
    if type(limit) is not int or not 1 <= limit <= 1000:
        raise Refused("invalid_argument", f"limit must be 1 to 1000, got {limit!r}")
    before = params.get("before")
    bound = None if before is None else version_of(before)
    states = await _states(context, user, thread_id, limit=limit, before=bound)
    checkpoints = [
        {
            "id": state["checkpoint"]["checkpoint_id"],
            "timestamp": state["created_at"],
            "step": state["metadata"]["step"],
            "node_name": state["metadata"]["node"],
            "metadata": state["metadata"],
        }
        for state in states
    ]
    return {"checkpoints": checkpoints}


async def _states(
    context: ServerContext, user: str, thread_id: str, *, limit: int, before: int | None
) -> list[dict[str, Any]]:
    await thread_info_or_404(context, thread_id, user)
    key = ThreadKey(thread_id, user)
    found = await queries.state_history(
        context, key, limit=limit, before=before, metadata=None, encode=langchain_json
    )
    return found or []


async def _state_fork(
    context: ServerContext, user: str, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    checkpoint = params.get("checkpoint_id")
    version_of(checkpoint)
    fields = {**_params(params, "input", "config"), "checkpoint_id": str(checkpoint)}
    record = await _start_run(context, user, thread_id, fields)
    return {"run_id": record.run_id, "thread_id": thread_id}


async def _agent_tree(
    context: ServerContext, user: str, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    runs = await manager_of(context).locate_runs(user, thread_id, limit=1)
    status = runs[0]["status"] if runs else "success"
    statuses = {"pending": "started", "running": "running", "success": "completed"}
    tree: dict[str, Any] = {
        "namespace": [],
        "status": statuses.get(status, status),
        "graph_name": context.graph_id,
    }
    if tree["status"] not in ("started", "running", "completed", "interrupted"):
        tree["status"] = "failed"
    return {"tree": tree}


_HANDLERS = {
    "run.start": _run_start,
    "input.respond": _input_respond,
    "state.get": _state_get,
    "state.listCheckpoints": _list_checkpoints,
    "state.fork": _state_fork,
    "agent.getTree": _agent_tree,
}


# --- event streams -------------------------------------------------------------------------


@router.post("/threads/{thread_id}/stream/events")
async def event_stream(
    thread_id: str, body: EventStreamRequest, context: Context, user: User
) -> EventStreamResponse:
    """The thread's runs as protocol events that pass the filter, until the client closes it."""
    unknown = [c for c in body.channels if c not in CHANNELS and c.split(":")[0] != "custom"]
    if unknown:
        bad_request(f"unknown channel(s) {unknown}; channels: {sorted(CHANNELS)}, custom")
    await thread_info_or_404(context, thread_id, user)
    runs = await manager_of(context).locate_runs(user, thread_id, limit=_KEPT_RUNS)
    done = {run["run_id"] for run in runs[1:]}  # every run but the newest
    return EventStreamResponse(_events(context, user, thread_id, body, done))


class _Connection:
    """One event stream: its filter and the ``seq`` of its last event."""

    def __init__(self, body: EventStreamRequest) -> None:
        self.body, self.seq, self.since = body, 0, body.since or 0

    def frames(self, events: list[dict[str, Any]]) -> str:
        out = []
        for event in events:
            if not self.body.wants(event):
                continue
            self.seq += 1
            if self.seq > self.since:
                text = StreamEncoder.dumps({**event, "seq": self.seq})
                out.append(f"id: {self.seq}\r\nevent: {event['method']}\r\ndata: {text}\r\n\r\n")
        return "".join(out)


async def _next_run(
    manager: RunRegistry, user: str, thread_id: str, done: set[str]
) -> RunRecord | None:
    runs = await manager.locate_runs(user, thread_id, limit=_KEPT_RUNS)
    for run in reversed(runs):
        if run["run_id"] not in done:
            done.add(run["run_id"])
            record = await manager.locate(user, run["run_id"], thread_id)
            if record is not None:
                return record
    return None


async def _events(
    context: ServerContext, user: str, thread_id: str, body: EventStreamRequest, done: set[str]
) -> AsyncGenerator[bytes, None]:
    manager, connection = manager_of(context), _Connection(body)
    runs = follow_runs(manager, user, thread_id, done, _next_run, "heartbeat")
    async with contextlib.aclosing(runs):
        async for record in runs:
            if isinstance(record, bytes):
                yield record
                continue
            async for chunk in _run_events(manager, record, context.graph_id, connection):
                yield chunk


async def _run_events(
    manager: RunRegistry, record: RunRecord, graph_name: str, connection: _Connection
) -> AsyncGenerator[bytes, None]:
    translator, last = RunTranslator(record.run_id, graph_name), 0
    log = cast(EventLog, record.log)  # the server's parts made it (``_run_parts``)
    try:
        async for batch in log.follow(0, heartbeat=PING_SECONDS):
            if not batch:
                yield comment("heartbeat")
                continue
            events: list[dict[str, Any]] = []
            for logged in batch:
                last = logged.id
                if logged.event != "end":
                    events += translator.translate(logged.id, logged.event, logged.data)
            chunk = connection.frames(events)
            if chunk:
                yield chunk.encode()
    except EventsLostError:
        pass  # the thread's state has what the dropped events said; the run's end still comes
    ended = await manager.locate(record.user_id, record.run_id, record.thread_id) or record
    chunk = connection.frames(translator.finish(last + 1, ended.status))
    if chunk:
        yield chunk.encode()
