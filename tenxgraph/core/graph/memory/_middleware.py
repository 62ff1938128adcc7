"""``MemoryMiddleware``: the user's relevant memories put in front of each model call.

Before each model call it searches the store with the text of the latest
user message, for the run's ``user_id``, and appends what it finds to the
call's system prompt. Only that one request changes: the memories are
never added to the state, so the stored conversation stays what the user
and the model said, and a memory deleted or changed is never seen again
from an old thread's history.

Decision: a store that fails (a server down) does not fail the turn; the
call goes on without memories and the failure is logged, since memories
improve an answer but are not needed for one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tenxgraph.core.graph._middleware import AgentMiddleware
from tenxgraph.core.graph.memory._tools import DEFAULT_NAMESPACE, user_of
from tenxgraph.errors import StorageError
from tenxgraph.storage.longterm.base import MemoryItem, MemoryStore

if TYPE_CHECKING:
    from tenxgraph.core.graph._model_call import ModelCall, ModelCallHandler
    from tenxgraph.core.state.message import Message

__all__ = ["MemoryMiddleware"]

logger = logging.getLogger("tenxgraph.memory")

HEADING = "What you remember about this user from earlier conversations:"


class MemoryMiddleware(AgentMiddleware):
    """Retrieve the user's memories relevant to the latest user message into the request."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        namespace: Sequence[str] = DEFAULT_NAMESPACE,
        limit: int = 5,
        heading: str = HEADING,
    ) -> None:
        """Search ``namespace`` of ``store`` for up to ``limit`` memories per model call."""
        self.store = store
        self.namespace = tuple(namespace)
        self.limit = limit
        self.heading = heading

    async def wrap_model_call(self, call: ModelCall, handler: ModelCallHandler) -> Message:
        """Add the found memories to this call's system prompt, then call the model."""
        query = next((m.text() for m in reversed(call.messages) if m.role == "user"), "")
        if query.strip():
            found = await self._search(query[-2000:], user_of(call.config))
            if found:
                prompt = "\n\n".join(p for p in (call.system_prompt, self.render(found)) if p)
                call = call.override(system_prompt=prompt)
        return await handler(call)

    async def _search(self, query: str, user_id: str) -> list[MemoryItem]:
        try:
            return await self.store.asearch(
                self.namespace, query=query, limit=self.limit, user_id=user_id
            )
        except StorageError:
            logger.warning(
                "memory search failed; the model is called without memories", exc_info=True
            )
            return []

    def render(self, found: Sequence[MemoryItem]) -> str:
        """The text added to the system prompt (override to change the format)."""
        lines = [f"- {item.value.get('text', item.value)}" for item in found]
        return "\n".join([self.heading, *lines])
