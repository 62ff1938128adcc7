"""Routes: runs and their streams, as LangGraph's server API has them (see docs/server.md).

Stateless runs (``/runs``, ``/runs/stream``, ``/runs/wait``) run on a new
thread that is deleted when the run ends (``on_completion="keep"`` keeps it).
Runs on a thread (``/threads/{id}/runs...``) are scoped to the caller like
the thread: another user's run or thread is a 404. Streams are Server-Sent
Events with ids; ``GET /threads/{id}/runs/{run_id}/stream`` with a
``Last-Event-ID`` header resumes one after the last event the client got.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal, cast
from urllib.parse import quote

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, model_validator

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ConfigError, EventsLostError, StateError, ThreadBusyError
from tenxgraph.runs import RunRecord, RunRegistry, RunSpec
from tenxgraph.server._assistant_presets import merged_run, resolve_assistant
from tenxgraph.server._context import Context, RunCaller, ServerContext, User, thread_config
from tenxgraph.server._event_log import EventLog, EventLogLimits
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._message_format import (
    Encode,
    MessageEncoder,
    StreamTranslator,
    output_json,
    tenxgraph_json,
)
from tenxgraph.server._run_request import (
    RunRequest,
    check_state_input,
    graph_input,
    name_graph,
    run_config_of,
)
from tenxgraph.server._run_stream import STREAM_MODES, StreamEncoder
from tenxgraph.server._sse import EventStreamResponse, LastFrame, comment
from tenxgraph.server._tracing import TRACE_KEY, incoming
from tenxgraph.server.http_errors import bad_request, not_found

__all__ = ["manager_of", "router", "run_or_404"]

router = APIRouter(tags=["runs"], route_class=CheckedJsonRoute)


PING_SECONDS = 15
"""A comment line on the stream this often keeps proxies from closing an idle one."""


def run_options(context: ServerContext) -> dict[str, Any]:
    """The run manager's keyword arguments from the settings' ``extra["runs"]``."""
    options = dict(context.settings.extra.get("runs", {}))
    keep = int(options.pop("keep_finished", 10_000))
    logs = int(options.pop("keep_logs", 1_000))
    return {"limits": EventLogLimits(**options), "keep_finished": keep, "keep_logs": logs}


def manager_of(context: ServerContext) -> RunRegistry:
    """The app's run registry (``create_app`` makes it; ``--postgres`` puts the durable one)."""
    manager: RunRegistry | None = context.state.get("runs")
    if manager is None:
        raise ConfigError("this server context has no run registry: make the app with create_app")
    return manager


def _encoder(context: ServerContext) -> StreamEncoder:
    encoder: StreamEncoder | None = context.state.get("stream_encoder")
    if encoder is None:
        encoder = context.state["stream_encoder"] = StreamEncoder()
    return encoder


def _locations(record: RunRecord) -> dict[str, str]:
    """The run's paths as headers, its ids percent-encoded.

    A header holds Latin-1 only and a thread id may be any text (``🙂``): the
    answer must never fail after the run was stored (a client would retry it).
    """
    thread_id, run_id = quote(record.thread_id, safe=""), quote(record.run_id, safe="")
    base = f"/threads/{thread_id}/runs/{run_id}"
    return {"Content-Location": base, "Location": f"{base}/stream"}


async def _thread_exists(context: ServerContext, thread_id: str, user: str) -> bool:
    key = ThreadKey(thread_id, user)  # a bad id is a 400, before any read
    return await context.graph.athread_info(thread_config(key.thread_id, key.user_id)) is not None


async def _start(
    context: ServerContext,
    user: str,
    body: RunRequest,
    thread_id: str | None,
    *,
    background: bool = False,
    headers: Mapping[str, str] | None = None,
) -> RunRecord:
    """Check the request against the thread, then hand the run to the manager.

    A background run is queued (``RunRegistry.enqueue``): with Postgres any
    worker may take it. The request's W3C trace ``headers`` go with the run
    (``server/_tracing.py``), so it continues the caller's trace wherever it runs.
    """
    body = await merged_run(context, user, body)  # its assistant's config and context: 404
    manager = manager_of(context)
    cleanup: Callable[[], Awaitable[None]] | None = None
    stateless = thread_id is None
    if thread_id is None:  # stateless: a thread of its own, deleted after unless kept
        thread_id = str(uuid.uuid4())
        if body.on_completion != "keep":
            cleanup = _deleter(context, thread_id, user)
    key = ThreadKey(thread_id, user)  # an id storage cannot key by is a 400 here, not in the run
    create = stateless or body.if_not_exists == "create"
    if not create and not manager.busy(user, thread_id):
        await _thread_info(context, key, create=False)  # a 404 for a missing thread
    given = graph_input(body, context.graph.state_class.model_fields)
    check_state_input(context.graph, given)  # a 422 now, not an error event after a 200
    config = run_config_of(body, thread_id, user)
    if cleanup is None:  # a thread that stays: the run names the graph in its metadata
        name_graph(config, context.graph_id)
    if "checkpoint_id" in config:  # a checkpoint the thread lacks: 404 now, not in the run
        await context.graph.aget_state(config)
    spec = RunSpec(
        graph=context.graph,
        input=given,
        config=config,
        stream_modes=body.modes(),
        stream_subgraphs=bool(body.stream_subgraphs),
        encoder=_encoder(context),
        invocation_state=dict(body.context) if body.context else None,
        after_seconds=body.after_seconds or 0.0,
        on_completion=cleanup,
    )
    kwargs = body.model_dump(
        include={
            "input",
            "command",
            "config",
            "context",
            "stream_mode",
            "checkpoint",
            "checkpoint_id",
        }
    )
    trace = incoming(headers or {})
    if trace is not None:
        kwargs[TRACE_KEY] = trace
    options: dict[str, Any] = {"metadata": body.metadata, "kwargs": kwargs}
    if not background and not stateless:  # a reject run on a thread busy elsewhere: 409 now
        await manager.admit(spec)
    if background:
        if create and cleanup is None:  # listed (and named) while the run waits for a worker
            await _create_thread(context, key, config["thread_metadata"])
        return await manager.enqueue(spec, assistant_id=body.assistant_id, **options)
    return manager.start(spec, assistant_id=body.assistant_id, **options)


async def _thread_info(context: ServerContext, key: ThreadKey, *, create: bool) -> Any:
    """The thread's listing line; a missing thread is a 404 unless the run may create it."""
    info = await context.graph.athread_info(thread_config(key.thread_id, key.user_id))
    if info is None and not create:
        not_found(
            f"thread {key.thread_id!r} (create it with POST /threads, "
            "or pass if_not_exists='create')"
        )
    return info


async def _create_thread(context: ServerContext, key: ThreadKey, metadata: dict[str, Any]) -> None:
    """Create a background run's new thread at once, named by its graph, as LangGraph does.

    A queued run may wait for a worker a while; its thread is listed
    meanwhile. One that exists (or that a run holds) is left as it is.
    """
    if await _thread_info(context, key, create=True) is not None:
        return
    config = {"thread_id": key.thread_id, "user_id": key.user_id, "multitask_strategy": "reject"}
    with contextlib.suppress(ThreadBusyError):
        await context.graph.aensure_thread(config, metadata=metadata)


def _deleter(context: ServerContext, thread_id: str, user: str) -> Callable[[], Awaitable[None]]:
    async def delete() -> None:
        await context.graph.adelete_thread(thread_config(thread_id, user))

    return delete


async def run_or_404(context: ServerContext, user: str, thread_id: str, run_id: str) -> RunRecord:
    """The caller's run ``run_id`` on ``thread_id`` (on any worker); 404 when there is none."""
    record = await manager_of(context).locate(user, run_id, thread_id)
    if record is None:
        not_found(f"run {run_id!r} on thread {thread_id!r}")
    return record


def _last_event_id(header: str | None) -> int:
    if header is None or header == "":
        return 0
    try:
        return int(header)
    except ValueError:
        bad_request(f"Last-Event-ID must be an event number from this stream, got {header!r}", 400)


def _stream(
    request: Request,
    record: RunRecord,
    *,
    after: int = 0,
    modes: frozenset[str] | None = None,
    cancel_on_disconnect: bool = False,
    encode: MessageEncoder = tenxgraph_json,
) -> EventStreamResponse:
    """The run's log from event ``after`` on, as SSE (``modes`` filters by stream mode).

    The log holds tenxgraph's message JSON; ``encode`` is the reader's format.
    """
    log = cast(EventLog, record.log)  # the server's parts made it (``_run_parts``)
    try:
        log.check_resume(after)
    except EventsLostError as exc:
        bad_request(str(exc), 410)

    reader = StreamTranslator(encode)

    async def events() -> AsyncGenerator[bytes, None]:
        try:
            async for batch in log.follow(after, heartbeat=PING_SECONDS):
                if not batch:  # the heartbeat: a ping comment
                    yield comment("ping")
                    continue
                chunk = "".join(
                    f"id: {logged.id}\r\nevent: {logged.event}\r\n"
                    f"data: {reader.data(logged.event, logged.data)}\r\n\r\n"
                    for logged in batch
                    if modes is None or _wanted(logged.event, modes)
                )
                if batch[-1].event == "end":  # the log's last: the stream ends with it
                    yield LastFrame(chunk.encode())
                elif chunk:
                    yield chunk.encode()
        except EventsLostError as exc:  # the reader fell behind the bound: say so, then stop
            text = StreamEncoder.dumps({"error": "EventsLostError", "message": str(exc)})
            yield f"event: error\r\ndata: {text}\r\n\r\n".encode()
        finally:
            if cancel_on_disconnect and not record.finished:
                await manager_of(request.app.state.context).cancel(record)

    return EventStreamResponse(events(), headers=_locations(record))


_ALWAYS = frozenset({"metadata", "error", "end", "remote_tool_call"})


def _wanted(event: str, modes: frozenset[str]) -> bool:
    if event in _ALWAYS:
        return True
    if event == "messages" or event.startswith("messages/"):
        kind = "messages-tuple" if event == "messages" else "messages"
        return kind in modes
    return event in modes


async def _wait(
    request: Request, record: RunRecord, cancel_on_disconnect: bool, encode: MessageEncoder
) -> Any:
    """The run's output once it ended, its messages as ``encode`` writes them.

    A client gone meanwhile cancels the run if asked to.
    """
    if not cancel_on_disconnect:
        await record.done.wait()
        return output_json(record.output, encode)
    while not record.done.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(record.done.wait(), 0.5)
        if not record.done.is_set() and await request.is_disconnected():
            await manager_of(request.app.state.context).cancel(record)
    return output_json(record.output, encode)


# --- runs a client waits on -----------------------------------------------------------------
# FastAPI tries a router's routes in order, at a cost per route tried (its path's pattern and
# FastAPI's bookkeeping, twice per request): nearly every run comes through these four, so
# they come first; no other route's path and method match theirs.


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    thread_id: str, body: RunRequest, request: Request, caller: RunCaller
) -> EventStreamResponse:
    """Run on the thread and stream it (``multitask_strategy`` when the thread is busy)."""
    record = await _start(caller.context, caller.user, body, thread_id, headers=request.headers)
    cancel = body.on_disconnect == "cancel"
    return _stream(request, record, cancel_on_disconnect=cancel, encode=caller.encode)


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: str, body: RunRequest, request: Request, caller: RunCaller
) -> JSONResponse:
    """Run on the thread; answer with its final values (``__error__`` when it failed)."""
    record = await _start(caller.context, caller.user, body, thread_id, headers=request.headers)
    output = await _wait(request, record, body.on_disconnect == "cancel", caller.encode)
    return JSONResponse(output, headers=_locations(record))


@router.post("/runs/stream")
async def stream_stateless(
    body: RunRequest, request: Request, caller: RunCaller
) -> EventStreamResponse:
    """Run on a new thread and stream it."""
    record = await _start(caller.context, caller.user, body, None, headers=request.headers)
    cancel = body.on_disconnect == "cancel"
    return _stream(request, record, cancel_on_disconnect=cancel, encode=caller.encode)


@router.post("/runs/wait")
async def wait_stateless(body: RunRequest, request: Request, caller: RunCaller) -> JSONResponse:
    """Run on a new thread; answer with its final values."""
    record = await _start(caller.context, caller.user, body, None, headers=request.headers)
    output = await _wait(request, record, body.on_disconnect == "cancel", caller.encode)
    return JSONResponse(output, headers=_locations(record))


# --- stateless runs ------------------------------------------------------------------------


@router.post("/runs")
async def create_stateless(
    body: RunRequest, request: Request, context: Context, user: User
) -> JSONResponse:
    """Start a background run on a new thread."""
    record = await _start(context, user, body, None, background=True, headers=request.headers)
    return JSONResponse(record.as_json(), headers=_locations(record))


class BatchRun(RunRequest):
    """One run of ``POST /runs/batch``: a ``RunCreate``, on ``thread_id`` or stateless."""

    thread_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _js_assistant_id(cls, data: Any) -> Any:
        """The JS SDK sends its own ``assistantId`` beside ``assistant_id``: one is dropped."""
        if isinstance(data, dict) and "assistantId" in data:
            data = dict(data)
            given = data.pop("assistantId")
            if data.setdefault("assistant_id", given) != given:
                raise StateError("assistantId and assistant_id name different assistants")
        return data


MAX_BATCH = 100
"""The most runs one ``POST /runs/batch`` starts."""


@router.post("/runs/batch")
async def create_batch(
    body: list[BatchRun], http: Request, context: Context, user: User
) -> list[dict[str, Any]]:
    """Start background runs, each as ``POST /threads/{thread_id}/runs`` or ``POST /runs`` would.

    Every run is checked (its assistant, its input, its thread) before any
    starts, so a bad one is a 4xx that started none.
    """
    if not 1 <= len(body) <= MAX_BATCH:
        bad_request(f"a batch holds 1 to {MAX_BATCH} runs, got {len(body)}")
    for run in body:
        await resolve_assistant(context, user, run.assistant_id)
        check_state_input(context.graph, graph_input(run))
        must_exist = run.thread_id is not None and run.if_not_exists != "create"
        if must_exist and not await _thread_exists(context, str(run.thread_id), user):
            not_found(f"thread {run.thread_id!r}")
    started = []
    for run in body:
        given = run.model_dump(exclude={"thread_id"}, exclude_unset=True)
        request = RunRequest.model_validate(given)
        record = await _start(
            context, user, request, run.thread_id, background=True, headers=http.headers
        )
        started.append(record.as_json())
    return started


class CancelMany(BaseModel):
    """``POST /runs/cancel``: which of the caller's runs to cancel."""

    model_config = ConfigDict(extra="forbid")

    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None


@router.post("/runs/cancel", status_code=204)
async def cancel_many(
    body: CancelMany,
    context: Context,
    user: User,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Cancel the caller's runs on a thread, by id, or by status (at least one filter)."""
    if body.thread_id is None and body.run_ids is None and body.status is None:
        bad_request("give thread_id, run_ids or status: which runs to cancel")
    manager = manager_of(context)
    wanted = set(body.run_ids) if body.run_ids is not None else None
    for record in manager.unfinished(user):
        if body.thread_id is not None and record.thread_id != body.thread_id:
            continue
        if wanted is not None and record.run_id not in wanted:
            continue
        if body.status not in (None, "all") and record.status != body.status:
            continue
        await manager.cancel(record, action=action)
    return Response(status_code=204)


# --- runs on a thread ----------------------------------------------------------------------


@router.post("/threads/{thread_id}/runs")
async def create_run(
    thread_id: str, body: RunRequest, request: Request, context: Context, user: User
) -> JSONResponse:
    """Start a background run on the thread; answer with the run (status ``pending``)."""
    record = await _start(context, user, body, thread_id, background=True, headers=request.headers)
    return JSONResponse(record.as_json(), headers=_locations(record))


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    thread_id: str,
    context: Context,
    user: User,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0)] = 0,
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"]
    | None = None,
) -> list[dict[str, Any]]:
    """The thread's runs this server still keeps (every worker's, with Postgres), newest first."""
    manager = manager_of(context)
    runs = await manager.locate_runs(user, thread_id, limit=limit, offset=offset, status=status)
    known = runs or await manager.locate_runs(user, thread_id, limit=1)
    if not known and not await _thread_exists(context, thread_id, user):
        not_found(f"thread {thread_id!r}")
    return runs


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(thread_id: str, run_id: str, context: Context, user: User) -> dict[str, Any]:
    """One run."""
    return (await run_or_404(context, user, thread_id, run_id)).as_json()


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
async def delete_run(thread_id: str, run_id: str, context: Context, user: User) -> Response:
    """Forget a run that ended (409 while it is pending or running)."""
    record = await run_or_404(context, user, thread_id, run_id)
    if not record.finished:
        bad_request(f"run {run_id!r} is {record.status}: cancel it first", 409)
    await manager_of(context).aforget(record)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: str,
    run_id: str,
    context: Context,
    user: User,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Stop the run: 202 at once, or 204 once it ended with ``wait=1``.

    ``interrupt`` keeps the turn so far, ``rollback`` discards it and the
    run's record (it answers 204 or 202 once both are gone). A run that
    already ended is a 409.
    """
    record = await run_or_404(context, user, thread_id, run_id)
    if record.finished:
        bad_request(f"run {run_id!r} already ended ({record.status}); nothing to cancel", 409)
    await manager_of(context).cancel(record, action=action, wait=wait)
    return Response(status_code=204 if wait else 202)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(
    thread_id: str, run_id: str, request: Request, context: Context, user: User, encode: Encode
) -> JSONResponse:
    """Wait for the run to end; its final values (``__error__`` when it failed)."""
    record = await run_or_404(context, user, thread_id, run_id)
    output = await _wait(request, record, False, encode)
    return JSONResponse(output, headers=_locations(record))


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    thread_id: str,
    run_id: str,
    request: Request,
    context: Context,
    user: User,
    encode: Encode,
    last_event_id: Annotated[str | None, Header()] = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    cancel_on_disconnect: bool = False,
) -> EventStreamResponse:
    """The run's stream from its start, or after ``Last-Event-ID``, until it ends.

    ``stream_mode`` narrows the events to those modes (of the ones the run
    was started with); ``metadata``, ``error`` and ``end`` always come.
    """
    record = await run_or_404(context, user, thread_id, run_id)
    given = [mode for mode in stream_mode or () if mode]  # the SDK sends None as ""
    modes = frozenset(given) if given else None
    if modes is not None and not modes <= STREAM_MODES:
        raise StateError(
            f"stream_mode {sorted(modes - STREAM_MODES)} is not supported; "
            f"supported: {sorted(STREAM_MODES)}"
        )
    after = _last_event_id(last_event_id)
    return _stream(
        request,
        record,
        after=after,
        modes=modes,
        cancel_on_disconnect=cancel_on_disconnect,
        encode=encode,
    )
