"""Routes: the long-term memory store (LangGraph's ``/store`` API) over a ``MemoryStore``.

Every item belongs to the caller: the store's tenant is the caller's user
id, so two users may use the same namespaces and never see each other's
items. Namespaces travel as lists of labels (``["users", "prefs"]``; in
``GET`` query strings joined by dots). A ``ttl`` is in minutes, as in
LangGraph; omitted or null, the store's ``default_ttl`` applies. A put's
``index`` (``false`` or field paths) chooses what a query finds; filters
take LangGraph's operators and namespace listings its ``"*"`` and
``suffix`` (see docs/memory.md). Reading an item
(``get``, ``search``) restarts its ttl unless the request says
``refresh_ttl: false`` (the store's ``refresh_on_read``, on by default, as in
LangGraph). A server made
without a memory store answers these routes with 404.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.server._context import Context, ServerContext, User
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._shapes import iso_time
from tenxgraph.server.http_errors import bad_request, not_found
from tenxgraph.storage.longterm.base import DEFAULT_TTL, MemoryItem, MemoryStore

__all__ = ["router"]

router = APIRouter(tags=["store"], route_class=CheckedJsonRoute)

Json = dict[str, Any]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class PutItem(_Body):
    """``PUT /store/items``."""

    namespace: list[str]
    key: str
    value: Json
    index: Literal[False] | list[str] | None = None
    """What a query finds: null every string of the value, false nothing, or field paths."""
    ttl: float | None = Field(None, gt=0)
    """Minutes the item lives (default: the store's ``default_ttl``)."""


class ItemKey(_Body):
    """``DELETE /store/items``."""

    namespace: list[str]
    key: str


class SearchItems(_Body):
    """``POST /store/items/search``."""

    namespace_prefix: list[str] = Field(default_factory=list)
    filter: Json | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    query: str | None = None
    refresh_ttl: bool | None = None


class ListNamespaces(_Body):
    """``POST /store/namespaces``."""

    prefix: list[str] | None = None
    suffix: list[str] | None = None
    max_depth: int | None = Field(None, ge=1)
    limit: int = Field(100, ge=0, le=1000)
    offset: int = Field(0, ge=0)


def _store(context: ServerContext) -> MemoryStore:
    if context.memory is None:
        not_found("store (this server has no memory store)")
    return context.memory


def item_json(item: MemoryItem) -> Json:
    """A LangGraph ``Item`` (``SearchItem`` with ``score`` after a query)."""
    found: Json = {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": iso_time(item.created_at),
        "updated_at": iso_time(item.updated_at),
    }
    if item.score is not None:
        found["score"] = item.score
    return found


@router.put("/store/items", status_code=204)
async def put_item(body: PutItem, context: Context, user: User) -> Response:
    """Store a value under a namespace and key, replacing any value there."""
    ttl = DEFAULT_TTL if body.ttl is None else body.ttl * 60
    await _store(context).aput(
        tuple(body.namespace), body.key, body.value, user_id=user, ttl=ttl, index=body.index
    )
    return Response(status_code=204)


@router.get("/store/items")
async def get_item(
    namespace: Annotated[str, Query(description="labels joined by dots: users.prefs")],
    key: str,
    context: Context,
    user: User,
    refresh_ttl: bool | None = None,
) -> Json | None:
    """The item, or null when there is none (what the SDKs' types say ``getItem`` answers)."""
    if not namespace:
        bad_request("namespace must not be empty")
    item = await _store(context).aget(
        tuple(namespace.split(".")), key, user_id=user, refresh_ttl=refresh_ttl
    )
    return None if item is None else item_json(item)


@router.delete("/store/items", status_code=204)
async def delete_item(body: ItemKey, context: Context, user: User) -> Response:
    """Delete the item (204 whether or not it was there: deleting is idempotent)."""
    await _store(context).adelete(tuple(body.namespace), body.key, user_id=user)
    return Response(status_code=204)


@router.post("/store/items/search")
async def search_items(body: SearchItems, context: Context, user: User) -> Json:
    """Items under the prefix: matching ``query`` best first, else newest first."""
    items = await _store(context).asearch(
        tuple(body.namespace_prefix),
        query=body.query,
        filter=body.filter,
        limit=body.limit,
        offset=body.offset,
        user_id=user,
        refresh_ttl=body.refresh_ttl,
    )
    return {"items": [item_json(item) for item in items]}


@router.post("/store/namespaces")
async def list_namespaces(body: ListNamespaces, context: Context, user: User) -> Json:
    """The caller's namespaces under ``prefix`` ending in ``suffix`` (``"*"``: any part)."""
    found = await _store(context).alist_namespaces(
        tuple(body.prefix or ()),
        suffix=tuple(body.suffix or ()),
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
        user_id=user,
    )
    return {"namespaces": [list(ns) for ns in found]}
