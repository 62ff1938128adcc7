"""Persistence: threads (``tenxgraph.storage.checkpointer``), their leases, media, memory.

``ThreadLeases`` (``tenxgraph.storage.leases``) is the lease contract: who
holds a thread while a run writes it. Every checkpointer tenxgraph ships
implements it beside the ``Checkpointer`` contract. Exports are imported on
first access, so importing this package loads no backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["STOP_REQUESTS", "ThreadLeases"]

if TYPE_CHECKING:
    from tenxgraph.storage.leases import STOP_REQUESTS, ThreadLeases
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__, {"tenxgraph.storage.leases": ("STOP_REQUESTS", "ThreadLeases")}
    )
