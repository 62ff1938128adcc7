"""Routes: threads, their state and history (LangGraph's ``/threads`` API, per user).

Every thread belongs to the caller (``User``); another user's thread id is
a 404, exactly as one that does not exist. See ``_shapes`` for the JSON.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.server import _shapes as shapes
from tenxgraph.server import _thread_queries as queries
from tenxgraph.server._context import Context, ServerContext, User, thread_config
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._message_format import Encode, MessageEncoder, tenxgraph_json
from tenxgraph.server._run_request import checkpoint_named, state_update
from tenxgraph.server.crons import forget_thread_crons
from tenxgraph.server.http_errors import bad_request, not_found
from tenxgraph.storage import ThreadInfo

__all__ = ["router"]

router = APIRouter(tags=["threads"], route_class=CheckedJsonRoute)

Json = dict[str, Any]
ThreadStatus = Literal["idle", "busy", "interrupted", "error"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Update(_Body):
    """One update of a superstep: values merged as if ``as_node`` returned them."""

    values: Any = None
    as_node: str | None = None
    command: Any = None


class Superstep(_Body):
    """Updates applied in order when a thread is created (LangGraph's ``supersteps``)."""

    updates: list[Update]


class ThreadCreate(_Body):
    """``POST /threads``."""

    thread_id: str | None = None
    """The new thread's id (default: a random UUID)."""
    metadata: Json = Field(default_factory=dict)
    if_exists: Literal["raise", "do_nothing"] = "raise"
    """An existing id: 409 (``raise``) or answer with the existing thread (``do_nothing``)."""
    supersteps: list[Superstep] | None = None
    ttl: Any = None
    """Not supported (422): threads live until deleted."""


class ThreadPatch(_Body):
    """``PATCH /threads/{thread_id}``: metadata merged into the thread's."""

    metadata: Json
    ttl: Any = None


class ThreadSearch(_Body):
    """``POST /threads/search`` and ``/threads/count``."""

    metadata: Json | None = None
    """Threads whose metadata contains this (JSON containment)."""
    values: Json | None = None
    """Not supported (422): filter by metadata instead."""
    ids: list[str] | None = None
    status: ThreadStatus | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    sort_by: (
        Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] | None
    ) = None
    sort_order: Literal["asc", "desc"] | None = None


class StateUpdate(_Body):
    """``POST /threads/{thread_id}/state``: values merged as a node's update would be."""

    values: Json | list[Json] | None = None
    as_node: str | None = None
    checkpoint: Json | None = None
    checkpoint_id: str | None = None


class StatePatch(_Body):
    """``PATCH /threads/{thread_id}/state``: metadata merged into the current checkpoint's."""

    metadata: Json


class ThreadPrune(_Body):
    """``POST /threads/prune``."""

    thread_ids: list[str] = Field(max_length=1000)
    strategy: Literal["delete", "keep_latest"] = "delete"


class HistoryQuery(_Body):
    """``POST /threads/{thread_id}/history``."""

    limit: int = Field(10, ge=1, le=1000)
    before: str | Json | None = None
    """Only checkpoints older than this one (an id or a ``Checkpoint``)."""
    metadata: Json | None = None
    """Only checkpoints whose metadata contains this."""
    checkpoint: Json | None = None


class CheckpointQuery(_Body):
    """``POST /threads/{thread_id}/state/checkpoint``."""

    checkpoint: Json
    subgraphs: bool = False


def _key(thread_id: str, user: str) -> ThreadKey:
    return ThreadKey(thread_id, user)  # a bad id raises InvalidIdError: 400


def _write(thread_id: str, user: str) -> Json:
    """The config of a thread write of the API: a thread a run holds answers 409 at once."""
    key = _key(thread_id, user)
    return thread_config(key.thread_id, key.user_id, multitask_strategy="reject")


async def thread_info_or_404(context: ServerContext, thread_id: str, user: str) -> ThreadInfo:
    """The caller's thread's listing line (one indexed read); 404 when it has none by that id."""
    key = _key(thread_id, user)
    info = await context.graph.athread_info(thread_config(key.thread_id, key.user_id))
    if info is None:
        not_found(f"thread {thread_id!r}")
    return info


async def thread_or_404(
    context: ServerContext, thread_id: str, user: str, encode: MessageEncoder = tenxgraph_json
) -> Json:
    """The caller's thread as JSON (messages as ``encode`` writes them); 404 when it has none."""
    info = await thread_info_or_404(context, thread_id, user)
    state = await context.graph.aget_state(thread_config(thread_id, user))
    busy = await queries.runs_busy(context, user, thread_id)
    return shapes.thread_json(info, state, busy, encode)


@router.post("/threads")
async def create_thread(body: ThreadCreate, context: Context, user: User, encode: Encode) -> Json:
    """Create a thread (empty, with metadata), or find the existing one (``do_nothing``)."""
    if body.ttl is not None:
        bad_request("ttl is not supported: threads live until deleted")
    thread_id = body.thread_id or str(uuid.uuid4())
    created = await context.graph.aensure_thread(_write(thread_id, user), metadata=body.metadata)
    if not created and body.if_exists == "raise":
        bad_request(f"thread {thread_id!r} already exists", 409)
    if created:
        for step in body.supersteps or ():
            for update in step.updates:
                await _apply(context, thread_id, user, update.values, update.as_node)
    return await thread_or_404(context, thread_id, user, encode)


async def _apply(
    context: ServerContext,
    thread_id: str,
    user: str,
    values: Any,
    as_node: str | None,
    checkpoint_id: str | None = None,
) -> int:
    if as_node is not None and as_node not in context.graph.nodes:
        bad_request(f"as_node {as_node!r} is not a node of the graph")
    config = thread_config(thread_id, user)
    if checkpoint_id is not None:  # the thread branches at that checkpoint
        config["checkpoint_id"] = checkpoint_id
    return await context.graph.aupdate_state(config, _input(context, values), as_node=as_node)


def _input(context: ServerContext, values: Any) -> Any:
    """The update's values, ``messages`` as the ``context`` field (``state_update``)."""
    return state_update(values, context.graph.state_class.model_fields)


@router.get("/threads/{thread_id}")
async def get_thread(thread_id: str, context: Context, user: User, encode: Encode) -> Json:
    """The thread: metadata, times, status, current values and interrupts."""
    return await thread_or_404(context, thread_id, user, encode)


@router.patch("/threads/{thread_id}", response_model=None)
async def patch_thread(
    thread_id: str,
    body: ThreadPatch,
    context: Context,
    user: User,
    encode: Encode,
    prefer: Annotated[str | None, Header()] = None,
) -> Json | Response:
    """Merge metadata into the thread's (``Prefer: return=minimal`` answers 204)."""
    if body.ttl is not None:
        bad_request("ttl is not supported: threads live until deleted")
    await context.graph.aupdate_metadata(_write(thread_id, user), body.metadata)
    if prefer and "return=minimal" in prefer:
        return Response(status_code=204)
    return await thread_or_404(context, thread_id, user, encode)


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, context: Context, user: User) -> Response:
    """Delete the thread, its whole log and its checkpoints; 409 while a run holds it."""
    if not await context.graph.adelete_thread(thread_config(thread_id, user)):
        not_found(f"thread {thread_id!r}")
    await forget_thread_crons(context, user, thread_id)
    return Response(status_code=204)


@router.post("/threads/search")
async def search_threads(
    body: ThreadSearch, context: Context, user: User, encode: Encode
) -> list[Json]:
    """The caller's threads matching the filters, newest update first unless sorted."""
    page = slice(body.offset, body.offset + body.limit)
    return (await _search(context, user, body, page, encode))[0]


@router.post("/threads/count")
async def count_threads(body: ThreadSearch, context: Context, user: User) -> int:
    """How many of the caller's threads match the filters."""
    return (await _search(context, user, body, slice(0, 0)))[1]


async def _search(
    context: ServerContext,
    user: str,
    body: ThreadSearch,
    page: slice,
    encode: MessageEncoder = tenxgraph_json,
) -> tuple[list[Json], int]:
    if body.values:
        bad_request("searching threads by values is not supported: filter by metadata")
    return await queries.search(
        context,
        user,
        metadata=body.metadata,
        ids=body.ids,
        status=body.status,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
        page=page,
        encode=encode,
    )


@router.post("/threads/{thread_id}/copy")
async def copy_thread(thread_id: str, context: Context, user: User, encode: Encode) -> Json:
    """A new thread (random id) holding a copy of this one as it is now."""
    await thread_info_or_404(context, thread_id, user)
    new_id = str(uuid.uuid4())
    await context.graph.afork(thread_config(thread_id, user), new_id)
    return await thread_or_404(context, new_id, user, encode)


@router.post("/threads/prune")
async def prune_threads(body: ThreadPrune, context: Context, user: User) -> Json:
    """Delete the caller's threads named (``strategy="delete"``); ``pruned_count`` of those deleted.

    A name that is no thread of the caller's is passed over. A thread a run
    is on is a 409 before any is deleted.
    """
    if body.strategy == "keep_latest":
        bad_request(
            "strategy 'keep_latest' is not supported: a thread's checkpoints are its "
            "append-only history, kept until the thread is deleted; prune with 'delete'"
        )
    keys = [_key(thread_id, user) for thread_id in dict.fromkeys(body.thread_ids)]
    for key in keys:
        if await queries.runs_busy(context, user, key.thread_id):
            bad_request(f"thread {key.thread_id!r} has a run on it: cancel it first", 409)
    pruned = 0
    for key in keys:
        if await context.graph.adelete_thread(thread_config(key.thread_id, user)):
            await forget_thread_crons(context, user, key.thread_id)
            pruned += 1
    return {"pruned_count": pruned}


@router.get("/threads/{thread_id}/state")
async def get_state(
    thread_id: str, context: Context, user: User, encode: Encode, subgraphs: bool = False
) -> Json:
    """The thread's current state (its newest checkpoint), with the thread's metadata.

    A checkpoint's ``metadata`` is what it records (``source``, ``step``,
    ``node``, ``status``); the current one also shows the thread's metadata
    beneath those keys, which is what ``PATCH .../state`` changes.
    ``subgraphs``: a task whose subgraph is paused shows that subgraph's state.
    """
    info = await thread_info_or_404(context, thread_id, user)
    config = thread_config(thread_id, user)
    history = await context.graph.aget_state_history(config, limit=1)
    if not history:
        not_found(f"thread {thread_id!r}")
    tree = None
    if subgraphs and history[0].state.execution_meta.subgraphs:
        tree = context.graph.state_tree(history[0].state)
    state = shapes.state_json(thread_id, history[0], encode, tree)
    if isinstance(info.metadata, dict):
        state["metadata"] = {**info.metadata, **state["metadata"]}
    return state


@router.patch("/threads/{thread_id}/state", status_code=204)
async def patch_state(thread_id: str, body: StatePatch, context: Context, user: User) -> Response:
    """Merge metadata into the current checkpoint's: a new checkpoint, as every change is.

    Checkpoints are never rewritten here, so the metadata goes into the
    thread's (as ``PATCH /threads/{id}``), saved as a checkpoint of node
    ``update_metadata`` that the current state then shows.
    """
    await thread_info_or_404(context, thread_id, user)
    await context.graph.aupdate_metadata(_write(thread_id, user), body.metadata)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_at(
    thread_id: str,
    checkpoint_id: str,
    context: Context,
    user: User,
    encode: Encode,
    subgraphs: bool = False,
) -> Json:
    """The thread's state at one checkpoint (its id is the version, ``"3"``)."""
    return await _state_at(context, thread_id, user, checkpoint_id, encode)


@router.post("/threads/{thread_id}/state/checkpoint")
async def post_state_at(
    thread_id: str, body: CheckpointQuery, context: Context, user: User, encode: Encode
) -> Json:
    """The thread's state at ``checkpoint.checkpoint_id`` (the current one without an id).

    A ``checkpoint_ns`` names a subgraph paused in the thread's current state:
    its state is answered (a subgraph has no checkpoints of its own).
    """
    checkpoint_id = body.checkpoint.get("checkpoint_id")
    namespace = body.checkpoint.get("checkpoint_ns")
    if namespace not in (None, ""):
        return await _subgraph_state(context, thread_id, user, str(namespace), encode)
    if checkpoint_id is None:
        return await get_state(thread_id, context, user, encode)
    return await _state_at(context, thread_id, user, checkpoint_id, encode)


def version_of(checkpoint_id: object) -> int:
    """The version a checkpoint id names (422 unless it is a positive integer's text)."""
    text = str(checkpoint_id)
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # "²" is a digit to isdigit
        bad_request(f"checkpoint_id must be a checkpoint version (1, 2, ...), got {text[:40]!r}")
    return int(text)


async def _subgraph_state(
    context: ServerContext, thread_id: str, user: str, namespace: str, encode: MessageEncoder
) -> Json:
    """The state of the subgraph paused at ``namespace`` (422: no such subgraph; 404: none)."""
    static = "|".join(part.split(":", 1)[0].split("#", 1)[0] for part in namespace.split("|"))
    if static not in context.graph.get_subgraphs(recurse=True):
        bad_request(f"checkpoint_ns {namespace[:80]!r} names no subgraph of the graph")
    await thread_info_or_404(context, thread_id, user)
    tree = await context.graph.aget_state(thread_config(thread_id, user), subgraphs=True)
    for segment in namespace.split("|"):
        tree = None if tree is None else tree.subgraphs.get(segment)
    if tree is None:
        not_found(f"a subgraph paused at {namespace[:80]!r} in thread {thread_id!r}")
    return shapes.subgraph_json(thread_id, tree, encode)


async def _state_at(
    context: ServerContext, thread_id: str, user: str, checkpoint: object, encode: MessageEncoder
) -> Json:
    version = version_of(checkpoint)
    key = _key(thread_id, user)
    newest = await queries.state_history(
        context, key, limit=1, before=version + 1, metadata=None, encode=encode
    )
    if newest and newest[0]["checkpoint"]["checkpoint_id"] == str(version):
        return newest[0]  # only this checkpoint's messages are loaded, not the whole history
    not_found(f"checkpoint {version} of thread {thread_id!r}")


@router.post("/threads/{thread_id}/state")
async def update_state(thread_id: str, body: StateUpdate, context: Context, user: User) -> Json:
    """Merge values into the thread as a node's update would; answers the new checkpoint.

    With ``checkpoint``/``checkpoint_id`` the values go into that older
    checkpoint's state, and the thread branches there (as a run from it does).
    """
    at = checkpoint_named(body.checkpoint, body.checkpoint_id, thread_id)
    if isinstance(body.values, list):
        bad_request("values must be one object of state fields, not a list")
    await thread_info_or_404(context, thread_id, user)
    version = await _apply(context, thread_id, user, body.values or {}, body.as_node, at)
    return {"checkpoint": shapes.checkpoint_json(thread_id, version)}


@router.post("/threads/{thread_id}/history")
async def history(
    thread_id: str, body: HistoryQuery, context: Context, user: User, encode: Encode
) -> list[Json]:
    """The thread's checkpoints, newest first, each as a state."""
    return await _history(context, thread_id, user, body, encode)


@router.get("/threads/{thread_id}/history")
async def history_get(
    thread_id: str,
    context: Context,
    user: User,
    encode: Encode,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    before: str | None = None,
) -> list[Json]:
    """``POST /threads/{thread_id}/history`` as a GET with query parameters."""
    query = HistoryQuery(limit=limit, before=before)
    return await _history(context, thread_id, user, query, encode)


def _before_id(before: str | Json | None) -> str | None:
    """The checkpoint id ``before`` names: an id, a ``Checkpoint``, or a ``Config`` (the JS SDK's).

    A dict naming no checkpoint is refused, not read as "no bound".
    """
    if not isinstance(before, dict):
        return before
    configurable = before.get("configurable")
    found = before.get("checkpoint_id")
    if found is None and isinstance(configurable, dict):
        found = configurable.get("checkpoint_id")
    if not isinstance(found, str):
        bad_request("'before' must be a checkpoint id, a Checkpoint or a Config naming one")
    return found


async def _history(
    context: ServerContext, thread_id: str, user: str, body: HistoryQuery, encode: MessageEncoder
) -> list[Json]:
    before = _before_id(body.before)
    states = await queries.state_history(
        context,
        _key(thread_id, user),
        limit=body.limit,
        before=None if before is None else version_of(before),
        metadata=body.metadata,
        encode=encode,
    )
    if states is None:
        not_found(f"thread {thread_id!r}")
    return states
