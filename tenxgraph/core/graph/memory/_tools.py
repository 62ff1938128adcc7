"""``memory_tools``: ``remember``, ``recall`` and ``forget`` over a memory store, per user.

Each tool reads the tenant from the run config's ``user_id`` (``"default"``
when absent), the same id that scopes the user's threads, so a model can
only reach the memories of the user it is talking to: the tenant is never a
tool argument the model could fill in. Facts are stored as
``{"text": fact}`` under one namespace; ``remember`` keys a fact by the hash
of its normalized text unless the model names a key, so the same fact said
twice is one memory, and a named key (``"favourite_drink"``) updates in
place when the fact changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from tenxgraph.core.graph._tools import Tool
from tenxgraph.core.state.ids import DEFAULT_USER, run_config
from tenxgraph.storage.longterm.base import MemoryStore

__all__ = ["DEFAULT_NAMESPACE", "fact_key", "memory_tools", "user_of"]

DEFAULT_NAMESPACE = ("memories",)
"""Where the tools and the middleware keep facts unless told otherwise."""


def user_of(config: Mapping[str, Any] | None) -> str:
    """The tenant of a run: its config's ``user_id`` (top level or ``configurable``)."""
    user = run_config(config).get("user_id")
    return DEFAULT_USER if user is None else str(user)


def fact_key(fact: str) -> str:
    """The key of a fact saved without one: a hash of its words, lowercased."""
    normal = " ".join(fact.lower().split())
    return "fact-" + hashlib.sha256(normal.encode()).hexdigest()[:16]


def memory_tools(
    store: MemoryStore,
    *,
    namespace: Sequence[str] = DEFAULT_NAMESPACE,
    recall_limit: int = 5,
) -> list[Tool]:
    """The three tools, bound to ``store`` and ``namespace``, for ``create_agent(tools=...)``."""
    where = tuple(namespace)

    async def remember(fact: str, config: dict[str, Any], key: str | None = None) -> str:
        """Save a fact about the user for later conversations.

        Args:
            fact: The fact, as one short self-contained sentence.
            key: A short name for the fact (e.g. favourite_drink) to update it later;
                omit it for a new fact.
            config: The run config (injected: the model never sees it).
        """
        name = key or fact_key(fact)
        await store.aput(where, name, {"text": fact}, user_id=user_of(config))
        return f"Remembered (key {name})."

    async def recall(query: str, config: dict[str, Any]) -> str:
        """Search the facts saved about the user.

        Args:
            query: Words to look for.
            config: The run config (injected: the model never sees it).
        """
        found = await store.asearch(where, query=query, limit=recall_limit, user_id=user_of(config))
        if not found:
            return "Nothing remembered about that."
        return "\n".join(f"{item.key}: {item.value.get('text', item.value)}" for item in found)

    async def forget(key: str, config: dict[str, Any]) -> str:
        """Delete a saved fact by its key (as recall shows it).

        Args:
            key: The key of the fact.
            config: The run config (injected: the model never sees it).
        """
        if await store.adelete(where, key, user_id=user_of(config)):
            return f"Forgot {key}."
        return f"No fact with key {key}."

    return [Tool(remember), Tool(recall), Tool(forget)]
