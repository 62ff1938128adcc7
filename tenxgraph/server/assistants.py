"""Routes: assistants (LangGraph's ``/assistants``): the served graph's, and users' presets.

The served graph's assistant has the graph's id (``graph_id``, ``"agent"``
by default) and never changes. Users make more (``POST /assistants``): each
a named, versioned preset of the served graph (config, context, metadata)
kept by the storage layer beside the threads (``_assistant_presets``); a run
started with one gets its config and context.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.server._assistant_presets import (
    assistant_json,
    assistants_of,
    default_assistant,
    resolve_assistant,
)
from tenxgraph.server._context import Context, ServerContext, User
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server.http_errors import bad_request, not_found
from tenxgraph.storage.assistants import Assistant

__all__ = ["check_assistant", "router"]

router = APIRouter(tags=["assistants"], route_class=CheckedJsonRoute)

Json = dict[str, Any]


class AssistantSearch(BaseModel):
    """``POST /assistants/search`` and ``/assistants/count``."""

    model_config = ConfigDict(extra="ignore")

    graph_id: str | None = None
    name: str | None = None
    metadata: Json | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)


async def check_assistant(context: ServerContext, user: str, assistant_id: str) -> Assistant:
    """The assistant ``assistant_id`` (the served graph's or one of the user's); else 404."""
    return await resolve_assistant(context, user, assistant_id)


def _matches(body: AssistantSearch, assistant: Assistant) -> bool:
    return (
        body.graph_id in (None, assistant.graph_id)
        and body.name in (None, assistant.name)
        and all(assistant.metadata.get(k) == v for k, v in (body.metadata or {}).items())
    )


async def _found(context: ServerContext, user: str, body: AssistantSearch) -> list[Assistant]:
    mine = await assistants_of(context).asearch(user)
    return [a for a in [default_assistant(context, user), *mine] if _matches(body, a)]


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, context: Context, user: User) -> Json:
    """The assistant (its latest version)."""
    return assistant_json(await check_assistant(context, user, assistant_id))


@router.post("/assistants/search")
async def search_assistants(body: AssistantSearch, context: Context, user: User) -> list[Json]:
    """The served graph's assistant and the caller's that match the filters."""
    found = await _found(context, user, body)
    return [assistant_json(a) for a in found[body.offset : body.offset + body.limit]]


@router.post("/assistants/count")
async def count_assistants(body: AssistantSearch, context: Context, user: User) -> int:
    """How many assistants match the filters."""
    return len(await _found(context, user, body))


class AssistantBody(BaseModel):
    """``POST /assistants`` and ``PATCH /assistants/{id}``: the SDKs' fields."""

    model_config = ConfigDict(extra="forbid")

    graph_id: str | None = None
    assistant_id: str | None = Field(None, min_length=1, max_length=256)
    config: Json | None = None
    context: Json | None = None
    metadata: Json | None = None
    if_exists: Literal["raise", "do_nothing"] | None = None
    name: str | None = Field(None, max_length=1000)
    description: str | None = Field(None, max_length=10_000)

    def changes(self) -> Json:
        """The fields given (not null), as an assistant's."""
        given = self.model_dump(include={"config", "context", "metadata", "name", "description"})
        return {k: v for k, v in given.items() if v is not None}


def _check_graph(context: ServerContext, graph_id: str | None) -> None:
    if graph_id not in (None, context.graph_id):
        not_found(f"graph {graph_id!r} (this server serves {context.graph_id!r})")


def _not_the_default(context: ServerContext, assistant_id: str, what: str) -> None:
    if assistant_id == context.graph_id:
        bad_request(
            f"{what} the served graph's assistant {assistant_id!r} is not supported: it is the "
            "graph as compiled; create an assistant (POST /assistants) with the config, context "
            "and metadata you want"
        )


@router.post("/assistants")
async def create_assistant(body: AssistantBody, context: Context, user: User) -> Json:
    """A new assistant of the served graph (version 1)."""
    if body.graph_id is None:
        bad_request("graph_id is required: the served graph's id")
    _check_graph(context, body.graph_id)
    assistant_id = body.assistant_id or str(uuid.uuid4())
    _not_the_default(context, assistant_id, "replacing")
    changes = body.changes()
    made = Assistant(assistant_id, context.graph_id, user, **{"name": assistant_id, **changes})
    created = await assistants_of(context).acreate(made, if_exists=body.if_exists or "raise")
    return assistant_json(created)


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(assistant_id: str, context: Context, user: User, xray: bool = False) -> Json:
    """The graph's nodes and edges (``{"nodes": [{"id", "type", "data"}], "edges": [...]}``).

    A join's edges are not conditional (each waits for all the join's
    sources): their ``data`` is ``join a + b``. With ``xray`` a subgraph
    node's graph comes too, its ids under the node's (``research:search``).
    """
    await check_assistant(context, user, assistant_id)
    nodes: list[Json] = []
    edges: list[Json] = []
    _drawn_json(context.graph.get_graph(), "", xray, nodes, edges)
    return {"nodes": nodes, "edges": edges}


def _drawn_json(drawn: Any, prefix: str, xray: bool, nodes: list[Json], edges: list[Json]) -> None:
    for n in drawn.nodes:
        nodes.append(
            {"id": prefix + n.name, "type": n.kind, "data": {"name": n.name, "detail": n.detail}}
        )
        if xray and n.subgraph is not None:
            _drawn_json(n.subgraph, f"{prefix}{n.name}:", True, nodes, edges)
    for e in drawn.edges:
        label = f"join {e.label}" if e.kind == "join" else e.label
        conditional = e.kind not in ("edge", "join")
        edges.append(_edge_json(prefix + e.source, prefix + e.target, conditional, label))


def _edge_json(source: str, target: str, conditional: bool, label: str) -> Json:
    """A graph edge; its ``data`` (the SDKs' type: a string) only when the edge has a label."""
    edge: Json = {"source": source, "target": target, "conditional": conditional}
    if label:
        edge["data"] = label
    return edge


class VersionsQuery(BaseModel):
    """``POST /assistants/{id}/versions``."""

    model_config = ConfigDict(extra="ignore")

    metadata: Json | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)


class SetLatest(BaseModel):
    """``POST /assistants/{id}/latest``."""

    model_config = ConfigDict(extra="ignore")

    version: int


@router.patch("/assistants/{assistant_id}")
async def update_assistant(
    assistant_id: str, body: AssistantBody, context: Context, user: User
) -> Json:
    """A new version with the fields given (metadata merged), made the latest."""
    _not_the_default(context, assistant_id, "changing")
    _check_graph(context, body.graph_id)
    found = await check_assistant(context, user, assistant_id)
    changes = body.changes()
    if "metadata" in changes:
        changes["metadata"] = {**found.metadata, **changes["metadata"]}
    changed = await assistants_of(context).aupdate(user, assistant_id, changes)
    if changed is None:
        not_found(f"assistant {assistant_id!r}")
    return assistant_json(changed)


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete_assistant(assistant_id: str, context: Context, user: User) -> Response:
    """Delete one of the caller's assistants with its versions (threads and runs stay)."""
    _not_the_default(context, assistant_id, "deleting")
    if not await assistants_of(context).adelete(user, assistant_id):
        not_found(f"assistant {assistant_id!r}")
    return Response(status_code=204)


@router.post("/assistants/{assistant_id}/versions")
async def assistant_versions(
    assistant_id: str, body: VersionsQuery, context: Context, user: User
) -> list[Json]:
    """The assistant's versions, newest first (the served graph's has one, version 1)."""
    latest = await check_assistant(context, user, assistant_id)
    versions = await assistants_of(context).aversions(user, assistant_id) or [latest]
    wanted = body.metadata or {}
    found = [
        {k: v for k, v in assistant_json(a).items() if k != "updated_at"}
        for a in versions
        if all(a.metadata.get(k) == v for k, v in wanted.items())
    ]
    return found[body.offset : body.offset + body.limit]


@router.post("/assistants/{assistant_id}/latest")
async def set_latest_version(
    assistant_id: str, body: SetLatest, context: Context, user: User
) -> Json:
    """Make ``version`` the one runs use; answer the assistant at it (404: no such version)."""
    latest = await check_assistant(context, user, assistant_id)
    if assistant_id == context.graph_id:
        if body.version != 1:
            not_found(f"version {body.version} of assistant {assistant_id!r} (it has 1 only)")
        return assistant_json(latest)
    moved = await assistants_of(context).aset_latest(user, assistant_id, body.version)
    if moved is None:
        not_found(f"version {body.version} of assistant {assistant_id!r}")
    return assistant_json(moved)


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, context: Context, user: User) -> Json:
    """JSON Schemas of the graph's state (input, output and state are the state class)."""
    await check_assistant(context, user, assistant_id)
    return _schemas(context.graph_id, context.graph.state_class)


def _schemas(graph_id: str, state_class: type[Any]) -> Json:
    state_schema = state_class.model_json_schema()
    return {
        "graph_id": graph_id,
        "input_schema": state_schema,
        "output_schema": state_schema,
        "state_schema": state_schema,
        "config_schema": None,
        "context_schema": None,
    }


@router.get("/assistants/{assistant_id}/subgraphs")
async def get_subgraphs(
    assistant_id: str,
    context: Context,
    user: User,
    namespace: str | None = None,
    recurse: bool = False,
) -> Json:
    """The schemas of the graph's subgraphs, by namespace (``research``, ``research|search``)."""
    await check_assistant(context, user, assistant_id)
    found = context.graph.get_subgraphs(namespace=namespace, recurse=recurse)
    return {ns: _schemas(context.graph_id, graph.state_class) for ns, graph in found.items()}
