"""Routes: tenxgraph's additions to LangGraph's API, in the same style.

- ``GET /assistants/{id}/tools`` lists the graph's tools (name, description,
  JSON Schema of the arguments); ``POST /threads/{id}/tools/{name}`` calls one
  directly, outside the model loop (``CompiledGraph.acall_tool``): recorded
  as a turn of the thread by default, or only run (``record: false``).
- ``GET /threads/{id}/messages`` pages through the thread's whole log, which
  keeps every message ever added; ``GET /threads/{id}/window`` is what the
  model sees next (the context window as log positions, its messages and the
  summary of what was cut). A state's ``values.messages`` is that window.
- ``POST /threads/{id}/rollback`` discards an unfinished turn (failed, stopped
  or paused), as ``CompiledGraph.arollback`` does: the way to drop a question
  instead of answering it.
- ``POST /media`` stores the request body (streamed, never held whole) as a
  media object of the caller and answers its ``MediaRef`` (``url`` is
  ``graph://media/{key}``, to put in a message's media block);
  ``GET /media/{key}`` streams one back with its MIME type, sandboxed and as
  an attachment unless it is a passive type (``_web_origin.media_headers``).
  Both are 404 when the server has no media store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import ToolError, UsageError
from tenxgraph.server._context import Context, User, thread_config
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._web_origin import media_headers
from tenxgraph.server.assistants import check_assistant
from tenxgraph.server.http_errors import bad_request, not_found
from tenxgraph.server.runs import manager_of
from tenxgraph.server.threads import thread_info_or_404

__all__ = ["router"]

router = APIRouter(tags=["tenxgraph"], route_class=CheckedJsonRoute)

Json = dict[str, Any]


class ToolCall(BaseModel):
    """``POST /threads/{thread_id}/tools/{name}``."""

    model_config = ConfigDict(extra="forbid")

    args: Json = Field(default_factory=dict)
    """The tool's arguments (checked against its parameters: 422 when they do not fit)."""
    record: bool = True
    """Add the call and its result to the thread as a turn (False: only run it)."""
    note: str | None = None
    """A user message recorded before the call (why it was made), with ``record``."""


@router.get("/assistants/{assistant_id}/tools")
async def list_tools(assistant_id: str, context: Context, user: User) -> list[Json]:
    """The graph's tools: name, description and the JSON Schema of their arguments."""
    await check_assistant(context, user, assistant_id)
    return [
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
        for spec in (tool.spec() for tool in context.graph.tools().values())
    ]


@router.post("/threads/{thread_id}/tools/{name}")
async def call_tool(
    thread_id: str, name: str, body: ToolCall, context: Context, user: User
) -> Json:
    """Call a tool directly; answers its result block (``is_error`` when the tool failed).

    Arguments that do not fit the tool's parameters are refused with 422 and
    nothing recorded (a model would get them back as an error result).
    """
    await thread_info_or_404(context, thread_id, user)
    tool = context.graph.tools().get(name)
    if tool is None:
        not_found(f"tool {name!r}")
    tool.validate(body.args)  # arguments that do not fit: 422 before anything is recorded
    try:
        result = await context.graph.acall_tool(
            name,
            body.args,
            thread_config(thread_id, user),
            record=body.record,
            note=body.note,
        )
    except UsageError as exc:
        bad_request(str(exc), 409)
    except ToolError as exc:
        if isinstance(exc, ValueError):  # ToolArgumentsError: the library maps it to 422
            raise
        bad_request(str(exc))
    return result.model_dump(mode="json")


@router.get("/threads/{thread_id}/messages")
async def list_messages(
    thread_id: str,
    context: Context,
    user: User,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Json:
    """A page of the thread's whole log, oldest first, each message with its position."""
    info = await thread_info_or_404(context, thread_id, user)
    config = thread_config(thread_id, user)
    stored = await context.graph.alist_messages(config, offset=offset, limit=limit)
    return {
        "log_length": info.log_length,
        "offset": offset,
        "messages": [{"seq": s.seq, **s.message.model_dump(mode="json")} for s in stored],
    }


@router.post("/threads/{thread_id}/rollback")
async def rollback_turn(thread_id: str, context: Context, user: User) -> Json:
    """Discard the thread's unfinished turn (failed, stopped, or paused at an interrupt).

    ``{"discarded": false}`` when the last turn completed (it stays). 409 while
    a run of this server is on the thread: cancel it first (``action=rollback``
    does both).
    """
    await thread_info_or_404(context, thread_id, user)
    if manager_of(context).busy(user, thread_id):
        bad_request(f"thread {thread_id!r} has a run going on: cancel it first", 409)
    return {"discarded": await context.graph.arollback(thread_config(thread_id, user))}


@router.get("/threads/{thread_id}/window")
async def get_window(thread_id: str, context: Context, user: User) -> Json:
    """The context window: log ranges ``[start, end)``, its messages, and the summary."""
    key = ThreadKey(thread_id, user)  # a bad id is a 400, before any read
    stored = await context.graph.aload_thread(thread_config(key.thread_id, key.user_id))
    if stored is None:
        not_found(f"thread {thread_id!r}")
    return {
        "log_length": stored.log_length,
        "window": [list(span) for span in stored.window],
        "messages": [m.model_dump(mode="json") for m in stored.context],
        "context_summary": stored.values.get("context_summary"),
    }


@router.post("/media")
async def put_media(
    request: Request,
    context: Context,
    user: User,
    content_type: Annotated[str | None, Header()] = None,
    filename: str | None = None,
) -> Json:
    """Store the body as media (its type checked against its bytes); answer its ``MediaRef``."""
    if context.media is None:
        not_found("media (this server has no media store)")
    declared = None if content_type in (None, "application/octet-stream") else content_type
    ref = await context.media.aput(request.stream(), declared, user_id=user, filename=filename)
    return ref.model_dump(mode="json", exclude_none=True)


@router.get("/media/{key}")
async def get_media(key: str, context: Context, user: User) -> StreamingResponse:
    """The media's bytes, streamed (never held whole), with its MIME type, never run as a page."""
    if context.media is None:
        not_found("media (this server has no media store)")
    stream = await context.media.aopen(key, user_id=user)  # MediaNotFoundError: 404

    async def chunks() -> AsyncIterator[bytes]:
        try:
            async for chunk in stream:
                yield chunk
        finally:
            await stream.aclose()

    info = stream.info
    return StreamingResponse(
        chunks(),
        media_type=info.mime_type,
        headers={
            "content-length": str(info.size),
            "cache-control": "private, max-age=31536000",
            **media_headers(info.key, info.mime_type),
        },
    )
