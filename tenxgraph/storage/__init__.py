"""Persistence: threads (``tenxgraph.storage.checkpointer``), their leases, media, memory.

``ThreadLeases`` (``tenxgraph.storage.leases``) is the lease contract: who
holds a thread while a run writes it. Every checkpointer tenxgraph ships
implements it beside the ``Checkpointer`` contract. ``checkpointer_at``
opens the checkpointer a setting names (a SQLite path, a Postgres DSN with
an optional Redis cache), and ``ThreadInfo`` is the listing line of a
thread: the floors above (the runtime's thread operations, the server) use
these without importing a checkpointer module. Exports are imported on
first access, so importing this package loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["STOP_REQUESTS", "ThreadInfo", "ThreadLeases", "checkpointer_at"]

if TYPE_CHECKING:
    from tenxgraph.storage._locations import checkpointer_at
    from tenxgraph.storage.checkpointer.base import ThreadInfo
    from tenxgraph.storage.leases import STOP_REQUESTS, ThreadLeases
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.storage._locations": ("checkpointer_at",),
            "tenxgraph.storage.checkpointer.base": ("ThreadInfo",),
            "tenxgraph.storage.leases": ("STOP_REQUESTS", "ThreadLeases"),
        },
    )
