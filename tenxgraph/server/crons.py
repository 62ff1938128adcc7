"""Routes: LangGraph's crons (``/runs/crons``), runs started on a schedule.

The schedule is the runs layer's (``tenxgraph.runs.CronScheduler`` over a
``CronTable``): kept in memory with the runs of a server without Postgres,
and in a table beside the run table with ``--postgres``, whose ticks become
queued runs that any worker claims. These routes check a cron's run as
``POST /runs`` checks one (a bad schedule, input or assistant is a 4xx
before anything is stored) and translate between the SDKs' ``Cron`` and
the runs layer's.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import uuid
from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from tenxgraph.runs import (
    ClaimedRun,
    Cron,
    CronQuery,
    CronScheduler,
    DueRun,
    DurableRunManager,
    MemoryCronTable,
    PgCronTable,
    RunSpec,
    check_schedule,
)
from tenxgraph.server._assistant_presets import merged_run
from tenxgraph.server._context import Context, ServerContext, User, thread_config
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._run_request import RunRequest, check_state_input, graph_input
from tenxgraph.server.http_errors import bad_request, not_found

__all__ = ["crons_of", "forget_thread_crons", "router"]

router = APIRouter(tags=["crons"], route_class=CheckedJsonRoute)

_SCHEDULE_FIELDS = ("schedule", "timezone", "end_time", "enabled", "on_run_completed")
"""A cron's own fields; the others of its body are the run's (as ``POST /runs`` takes them)."""
_RUN_KWARGS = {"input", "command", "config", "context", "stream_mode", "checkpoint"}
_END_TIME: TypeAdapter[dt.datetime | None] = TypeAdapter(dt.datetime | None)


def crons_of(context: ServerContext) -> CronScheduler:
    """The app's cron scheduler, over the table where its runs are kept."""
    scheduler: CronScheduler | None = context.state.get("crons")
    if scheduler is None:
        from tenxgraph.server.runs import manager_of

        manager = manager_of(context)
        table = (
            PgCronTable(manager.queue)
            if isinstance(manager, DurableRunManager)
            else MemoryCronTable()
        )
        scheduler = CronScheduler(table, functools.partial(_fire, context))
        context.state["crons"] = scheduler
    return scheduler


async def forget_thread_crons(context: ServerContext, user: str, thread_id: str) -> None:
    """Delete the crons of a thread that was deleted: their runs would have no thread to run on.

    A cron belongs to its thread as the thread's runs do; one made without a
    thread (each run on a new thread) is not touched.
    """
    table = crons_of(context).table
    query = CronQuery(user, thread_id=thread_id)
    for cron in await table.search(
        query, limit=_THREAD_CRONS, offset=0, sort_by="cron_id", descending=False
    ):
        await table.delete(user, cron.cron_id)


_THREAD_CRONS = 10_000
"""The most crons one thread's deletion deletes with it (one search)."""


async def open_crons(context: ServerContext) -> None:
    """Start the scheduler with the server (stopped first at shutdown)."""
    scheduler = crons_of(context)
    await scheduler.open()
    context.on_shutdown.append(scheduler.aclose)


async def _fire(context: ServerContext, due: DueRun) -> None:
    """Start a due run in this process's registry, as a worker starts a claimed row."""
    from tenxgraph.server._claimed_runs import resumed
    from tenxgraph.server.runs import _encoder, manager_of

    claim = ClaimedRun(
        due.run_id, due.user_id, due.thread_id, "pending", due.record, due.request, 0, None, None
    )
    spec = await resumed(context.graph, _encoder(context), claim)
    if isinstance(spec, RunSpec):
        await manager_of(context).enqueue(
            spec,
            assistant_id=str(due.record["assistant_id"]),
            metadata=due.record["metadata"],
            kwargs=due.record["kwargs"],
        )


async def _run_of(context: ServerContext, user: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The cron's run as the runs layer keeps it, checked as ``POST /runs`` checks one.

    A user's assistant gives its config and context as they are now: a later
    change to the assistant does not reach the cron's runs (update the cron).
    """
    if "\\u0000" in json.dumps(payload):  # the same rule on every backend: Postgres JSON lacks it
        bad_request("a cron's fields may not contain the NUL character (\\u0000)")
    body = await merged_run(context, user, RunRequest.model_validate(payload))
    check_state_input(context.graph, graph_input(body, context.graph.state_class.model_fields))
    return {
        "kwargs": body.model_dump(mode="json", include=_RUN_KWARGS),
        "metadata": dict(body.metadata or {}),
    }


def _schedule_of(body: dict[str, Any]) -> dict[str, Any]:
    """The cron's own fields of ``body`` (checked), popped from it."""
    given = {name: body.pop(name) for name in _SCHEDULE_FIELDS if name in body}
    if "end_time" in given:
        given["end_time"] = _END_TIME.validate_python(given["end_time"])
        if given["end_time"] is not None and given["end_time"].tzinfo is None:
            given["end_time"] = given["end_time"].replace(tzinfo=dt.UTC)
    if given.get("on_run_completed") not in (None, "delete", "keep"):
        bad_request("on_run_completed must be 'delete' or 'keep'")
    if given.get("enabled") is not None and not isinstance(given["enabled"], bool):
        bad_request("enabled must be true or false")
    return {k: v for k, v in given.items() if v is not None or k == "end_time"}


async def _create(
    context: ServerContext, user: str, body: dict[str, Any], thread_id: str | None
) -> dict[str, Any]:
    body = dict(body)
    schedule = _schedule_of(body)
    check_schedule(schedule.get("schedule", ""), schedule.get("timezone"))
    run = await _run_of(context, user, body)
    if thread_id is not None:
        info = await context.graph.athread_info(thread_config(thread_id, user))
        if info is None:
            not_found(f"thread {thread_id!r}")
    now = dt.datetime.now(dt.UTC)
    cron = Cron(
        cron_id=str(uuid.uuid4()),
        user_id=user,
        assistant_id=body["assistant_id"],
        thread_id=thread_id,
        payload=body,
        run=run,
        metadata=run["metadata"],
        **schedule,
    ).scheduled(now)
    return (await crons_of(context).table.create(cron)).as_json()


@router.post("/runs/crons")
async def create_cron(body: dict[str, Any], context: Context, user: User) -> dict[str, Any]:
    """A cron whose runs start each on a new thread."""
    return await _create(context, user, body, None)


@router.post("/threads/{thread_id}/runs/crons")
async def create_thread_cron(
    thread_id: str, body: dict[str, Any], context: Context, user: User
) -> dict[str, Any]:
    """A cron whose runs start on the thread (404 when the caller has no such thread)."""
    return await _create(context, user, body, thread_id)


class CronSearch(BaseModel):
    """``POST /runs/crons/search`` and ``/count``: the SDKs' filters."""

    model_config = ConfigDict(extra="allow")

    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal[
        "cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at",
        "updated_at",
    ] = "created_at"  # fmt: skip
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[str] | None = None

    def query(self, user: str) -> CronQuery:
        """The runs layer's query for ``user``."""
        return CronQuery(user, self.assistant_id, self.thread_id, self.enabled, self.metadata)


@router.post("/runs/crons/search")
async def search_crons(body: CronSearch, context: Context, user: User) -> list[dict[str, Any]]:
    """The caller's crons that match, newest first unless ``sort_by``/``sort_order`` say."""
    found = await crons_of(context).table.search(
        body.query(user),
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        descending=body.sort_order == "desc",
    )
    answers = [cron.as_json() for cron in found]
    if body.select:
        answers = [{k: v for k, v in a.items() if k in body.select} for a in answers]
    return answers


@router.post("/runs/crons/count")
async def count_crons(body: CronSearch, context: Context, user: User) -> int:
    """How many of the caller's crons match."""
    return await crons_of(context).table.count(body.query(user))


async def _cron_or_404(context: ServerContext, user: str, cron_id: str) -> Cron:
    cron = await crons_of(context).table.get(user, cron_id)
    if cron is None:
        not_found(f"cron {cron_id!r}")
    return cron


@router.patch("/runs/crons/{cron_id}")
async def update_cron(
    cron_id: str, body: dict[str, Any], context: Context, user: User
) -> dict[str, Any]:
    """Change the schedule or the run; the next tick is computed again from now."""
    cron = await _cron_or_404(context, user, cron_id)
    body = dict(body)
    changes = _schedule_of(body)
    schedule = {**_own_fields(cron), **changes}
    check_schedule(schedule["schedule"], schedule.get("timezone"))
    payload = {**cron.payload, **{k: v for k, v in body.items() if v is not None}}
    payload["assistant_id"] = cron.assistant_id
    run = await _run_of(context, user, payload)
    now = dt.datetime.now(dt.UTC)
    changed = Cron(
        cron_id=cron.cron_id,
        user_id=cron.user_id,
        assistant_id=cron.assistant_id,
        thread_id=cron.thread_id,
        payload=payload,
        run=run,
        metadata=run["metadata"],
        created_at=cron.created_at,
        updated_at=now,
        **schedule,
    ).scheduled(now)
    await crons_of(context).table.put(changed)
    return changed.as_json()


def _own_fields(cron: Cron) -> dict[str, Any]:
    return {name: getattr(cron, name) for name in _SCHEDULE_FIELDS}


@router.delete("/runs/crons/{cron_id}")
async def delete_cron(cron_id: str, context: Context, user: User) -> Response:
    """Delete the cron: no more runs start from it (runs it started go on)."""
    if not await crons_of(context).table.delete(user, cron_id):
        not_found(f"cron {cron_id!r}")
    return Response(status_code=204)
