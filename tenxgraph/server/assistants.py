"""Routes: the one assistant a server has, its graph and its schemas (LangGraph's ``/assistants``).

A tenxgraph server serves one graph, so it has one assistant whose id is
the graph's id (``graph_id``, ``"agent"`` by default): clients pass it as
``assistant_id`` to start runs. It has one version (1), which is its
latest. Creating, changing or deleting assistants is not supported (405
is what routes that do not exist answer; these answer 422 saying so).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from tenxgraph.server._context import Context, ServerContext, User
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server._shapes import iso_time
from tenxgraph.server.http_errors import bad_request, not_found

__all__ = ["assistant_json", "check_assistant", "router"]

router = APIRouter(tags=["assistants"], route_class=CheckedJsonRoute)

Json = dict[str, Any]

_EPOCH = 0.0
"""The assistant exists as long as the server: its times are the UNIX epoch, never changing."""


class AssistantSearch(BaseModel):
    """``POST /assistants/search`` and ``/assistants/count``."""

    model_config = ConfigDict(extra="ignore")

    graph_id: str | None = None
    name: str | None = None
    metadata: Json | None = None
    limit: int = Field(10, ge=0, le=1000)
    offset: int = Field(0, ge=0)


def check_assistant(context: ServerContext, assistant_id: str) -> None:
    """404 unless ``assistant_id`` is this server's assistant (its graph id)."""
    if assistant_id != context.graph_id:
        not_found(f"assistant {assistant_id!r} (this server serves {context.graph_id!r})")


def assistant_json(context: ServerContext) -> Json:
    """A LangGraph ``Assistant`` for the served graph."""
    return {
        "assistant_id": context.graph_id,
        "graph_id": context.graph_id,
        "config": {},
        "context": {},
        "created_at": iso_time(_EPOCH),
        "updated_at": iso_time(_EPOCH),
        "metadata": {},
        "version": 1,
        "name": context.graph_id,
        "description": "",
    }


def _matches(context: ServerContext, body: AssistantSearch) -> bool:
    return body.graph_id in (None, context.graph_id) and body.name in (None, context.graph_id)


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, context: Context, user: User) -> Json:
    """The assistant (its id is the graph id)."""
    check_assistant(context, assistant_id)
    return assistant_json(context)


@router.post("/assistants/search")
async def search_assistants(body: AssistantSearch, context: Context, user: User) -> list[Json]:
    """The one assistant, when it matches the filters."""
    found = [assistant_json(context)] if _matches(context, body) and not body.metadata else []
    return found[body.offset : body.offset + body.limit]


@router.post("/assistants/count")
async def count_assistants(body: AssistantSearch, context: Context, user: User) -> int:
    """1 when the assistant matches the filters, else 0."""
    return int(_matches(context, body) and not body.metadata)


@router.post("/assistants")
async def create_assistant(context: Context, user: User) -> Json:
    """Not supported: a server has the one assistant of its graph."""
    bad_request(f"creating assistants is not supported: use assistant_id {context.graph_id!r}")


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(assistant_id: str, context: Context, user: User, xray: bool = False) -> Json:
    """The graph's nodes and edges (``{"nodes": [{"id", "type", "data"}], "edges": [...]}``).

    A join's edges are not conditional (each waits for all the join's
    sources): their ``data`` is ``join a + b``. With ``xray`` a subgraph
    node's graph comes too, its ids under the node's (``research:search``).
    """
    check_assistant(context, assistant_id)
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
async def update_assistant(assistant_id: str, context: Context, user: User) -> Json:
    """Not supported: the assistant is the served graph as it was compiled."""
    check_assistant(context, assistant_id)
    bad_request(
        "changing the assistant is not supported: it is the served graph; pass config, "
        "context and metadata with each run instead"
    )


@router.delete("/assistants/{assistant_id}")
async def delete_assistant(assistant_id: str, context: Context, user: User) -> Json:
    """Not supported: the assistant lives as long as the server serves its graph."""
    check_assistant(context, assistant_id)
    bad_request("deleting the assistant is not supported: it is the served graph")


@router.post("/assistants/{assistant_id}/versions")
async def assistant_versions(
    assistant_id: str, body: VersionsQuery, context: Context, user: User
) -> list[Json]:
    """The assistant's versions: the one it has (version 1)."""
    check_assistant(context, assistant_id)
    version = {k: v for k, v in assistant_json(context).items() if k != "updated_at"}
    found = [] if body.metadata else [version]
    return found[body.offset : body.offset + body.limit]


@router.post("/assistants/{assistant_id}/latest")
async def set_latest_version(
    assistant_id: str, body: SetLatest, context: Context, user: User
) -> Json:
    """Version 1 is the assistant's only version, and its latest: the assistant."""
    check_assistant(context, assistant_id)
    if body.version != 1:
        not_found(f"version {body.version} of assistant {assistant_id!r} (it has version 1 only)")
    return assistant_json(context)


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, context: Context, user: User) -> Json:
    """JSON Schemas of the graph's state (input, output and state are the state class)."""
    check_assistant(context, assistant_id)
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
    check_assistant(context, assistant_id)
    found = context.graph.get_subgraphs(namespace=namespace, recurse=recurse)
    return {ns: _schemas(context.graph_id, graph.state_class) for ns, graph in found.items()}
