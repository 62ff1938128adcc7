"""Assistants as the server sees them: the served graph's own, and the presets users made.

The served graph's assistant (its id is the graph id) always exists and
never changes. Users' assistants are kept by the storage layer
(``tenxgraph.storage.assistants``) beside the graph's threads: in the
checkpointer's SQLite file or Postgres schema, in memory otherwise. A run
started with one runs the served graph with the assistant's config and
context under the run's own (the run's win, ``configurable`` merged key by
key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenxgraph.server._shapes import iso_time
from tenxgraph.server.http_errors import not_found
from tenxgraph.storage.assistants import (
    Assistant,
    AssistantStore,
    MemoryAssistants,
    PgAssistants,
    SqliteAssistants,
)

if TYPE_CHECKING:
    from tenxgraph.server._context import ServerContext
    from tenxgraph.server._run_request import RunRequest

__all__ = ["assistant_json", "assistants_of", "merged_run", "resolve_assistant"]

Json = dict[str, Any]

EPOCH = iso_time(0.0)
"""The served graph's assistant exists as long as the server: its times never change."""


def assistants_of(context: ServerContext) -> AssistantStore:
    """The users' assistants, beside the graph's threads (opened on first use)."""
    store: AssistantStore | None = context.state.get("assistants")
    if store is None:
        checkpointer = context.graph.checkpointer
        path = getattr(checkpointer, "path", None)
        conninfo = getattr(checkpointer, "conninfo", None)
        if isinstance(path, str):
            store = SqliteAssistants(path)
        elif conninfo is not None:
            store = PgAssistants(conninfo, schema=str(getattr(checkpointer, "schema", "tenxgraph")))
        else:
            store = MemoryAssistants()
        context.state["assistants"] = store
        context.on_shutdown.append(store.aclose)
    return store


def default_assistant(context: ServerContext, user: str) -> Assistant:
    """The served graph's assistant."""
    graph_id = context.graph_id
    return Assistant(
        graph_id, graph_id, user, name=graph_id, description="", created_at=EPOCH, updated_at=EPOCH
    )


async def resolve_assistant(context: ServerContext, user: str, assistant_id: str) -> Assistant:
    """The assistant ``assistant_id`` (the served graph's, or one of the user's); else 404."""
    if assistant_id == context.graph_id:
        return default_assistant(context, user)
    found = await assistants_of(context).aget(user, assistant_id)
    if found is None:
        not_found(f"assistant {assistant_id!r} (this server serves {context.graph_id!r})")
    return found


def assistant_json(assistant: Assistant) -> Json:
    """A LangGraph ``Assistant``."""
    return {
        "assistant_id": assistant.assistant_id,
        "graph_id": assistant.graph_id,
        "config": assistant.config,
        "context": assistant.context,
        "created_at": assistant.created_at,
        "updated_at": assistant.updated_at,
        "metadata": assistant.metadata,
        "version": assistant.version,
        "name": assistant.name,
        "description": assistant.description if assistant.description is not None else "",
    }


async def merged_run(context: ServerContext, user: str, body: RunRequest) -> RunRequest:
    """``body`` with its assistant's config and context under its own (404: no such assistant)."""
    assistant = await resolve_assistant(context, user, body.assistant_id)
    if not (assistant.config or assistant.context):
        return body
    config = {**assistant.config, **(body.config or {})}
    configurable = {
        **assistant.config.get("configurable", {}),
        **(body.config or {}).get("configurable", {}),
    }
    if configurable:
        config["configurable"] = configurable
    given_context = {**assistant.context, **(body.context or {})}
    return body.model_copy(update={"config": config, "context": given_context or None})
