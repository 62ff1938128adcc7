"""Assistants: the graph a server serves (LangGraph's ``/assistants``) and its tools.

A tenxgraph server serves one graph, so it has one assistant whose id is the
graph's id: what runs take as ``assistant_id``. ``get_tools`` reads
tenxgraph's ``GET /assistants/{id}/tools``: each tool as the model is told
about it, the arguments a direct call (``threads.call_tool``) must fit.
"""

from __future__ import annotations

from typing import Any

from tenxgraph.client._threads import segment
from tenxgraph.client._transport import Transport
from tenxgraph.core.llm.base import ToolSpec

__all__ = ["Assistants"]


class Assistants:
    """The ``/assistants`` endpoints (async)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    async def search(
        self,
        *,
        graph_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """The assistants matching the filters (``assistant_id``, ``graph_id``, ``name``...)."""
        body = {"graph_id": graph_id, "metadata": metadata, "limit": limit, "offset": offset}
        result: list[dict[str, Any]] = await self._transport.request(
            "POST",
            "/assistants/search",
            json_body={k: v for k, v in body.items() if v is not None},
        )
        return result

    async def get_tools(self, assistant_id: str) -> list[ToolSpec]:
        """The assistant's tools: name, description and the JSON Schema of their arguments."""
        data = await self._transport.request("GET", f"/assistants/{segment(assistant_id)}/tools")
        return [
            ToolSpec(
                name=str(item["name"]),
                description=str(item.get("description") or ""),
                parameters=dict(item.get("parameters") or {}),
            )
            for item in data or []
        ]
