"""``Closing``: ``close`` and the ``with`` / ``async with`` forms of a store's ``aclose``.

Checkpointers, media stores and memory stores all hold connections or files
that ``aclose`` releases; this gives each of them the sync twin and both
context-manager forms from that one method.
"""

from __future__ import annotations

from typing import Self

from tenxgraph._sync import run_sync

__all__ = ["Closing"]


class Closing:
    """Mixin: ``close``, ``with`` and ``async with`` over the subclass's ``aclose``."""

    async def aclose(self) -> None:
        """Release connections and files; a later call opens them again."""

    def close(self) -> None:
        """Sync ``aclose``."""
        run_sync(self.aclose())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
