"""``AppState``: a JSON-validated key-value store on the thread, never shown to the model.

What Strands Agents calls "agent state": data that lives beside the conversation,
persists with the thread, and is read and written by tools and application
code. Values must be JSON; anything else is refused when it is set, so what
is stored can always be restored.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import RootModel, field_validator

from tenxgraph.errors import StateError

__all__ = ["AppState"]


class AppState(RootModel[dict[str, Any]]):
    """Key-value data of a thread: ``get``, ``set``, ``delete``; stored as a JSON object."""

    root: dict[str, Any] = {}

    @field_validator("root")
    @classmethod
    def _json_only(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, item in value.items():
            _check(key, item)
        return value

    def get(self, key: str | None = None, default: Any = None) -> Any:
        """The value of ``key`` (``default`` when absent), or a copy of everything when no key."""
        if key is None:
            return json.loads(json.dumps(self.root))
        return self.root.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key``; anything else raises ``ValueError``."""
        self.root[key] = json.loads(_check(key, value))

    def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        self.root.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self.root

    def __len__(self) -> int:
        return len(self.root)


def _check(key: Any, value: Any) -> str:
    if not isinstance(key, str):
        raise StateError(f"app_state keys must be strings, got {key!r}")
    try:
        return json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StateError(f"app_state value for {key!r} is not JSON-serializable: {exc}") from None
