"""Checkpointers: durable threads behind one small contract.

``InMemoryCheckpointer`` and ``SqliteCheckpointer`` need only the standard
library; ``PgCheckpointer`` (extra ``postgres``) and ``RedisThreadCache``
(extra ``redis``) need theirs. Every export is imported on first access (see
``tenxgraph.utils._lazy``), so importing this package, or the contract in
``base`` as the run loop does, loads no backend: not psycopg, redis or
``sqlite3``.

Retention: ``keep_checkpoints=N`` (every backend) deletes, on each save,
the thread's checkpoints older than its newest N. The newest checkpoint is
always kept, and resuming a run paused at an interrupt needs only the
thread's state row (values and window), which is never pruned; the log of
messages is never pruned either. Only time travel to older checkpoints is
lost.

``ThreadKey``, ``DEFAULT_USER`` and ``run_config`` moved to
``tenxgraph.core.state`` (thread identity is data, not storage); reading
them from here still works, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "PgCheckpointer",
    "RedisThreadCache",
    "SqliteCheckpointer",
    "StoredMessage",
    "StoredThread",
    "ThreadInfo",
    "ThreadStamp",
    "ThreadWrite",
    "Window",
]

if TYPE_CHECKING:
    # Moved to tenxgraph.core.state: deprecated here, still typed for users' type checkers.
    from tenxgraph.core.state.ids import DEFAULT_USER as DEFAULT_USER
    from tenxgraph.core.state.ids import ThreadKey as ThreadKey
    from tenxgraph.core.state.ids import run_config as run_config
    from tenxgraph.storage.checkpointer.base import (
        Checkpoint,
        Checkpointer,
        StoredMessage,
        StoredThread,
        ThreadInfo,
        ThreadStamp,
        ThreadWrite,
        Window,
    )
    from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer
    from tenxgraph.storage.checkpointer.redis_cache import RedisThreadCache
    from tenxgraph.storage.checkpointer.sqlite import SqliteCheckpointer
else:
    from tenxgraph.utils._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "tenxgraph.storage.checkpointer.base": (
                "Checkpoint",
                "Checkpointer",
                "StoredMessage",
                "StoredThread",
                "ThreadInfo",
                "ThreadStamp",
                "ThreadWrite",
                "Window",
            ),
            "tenxgraph.storage.checkpointer.memory": ("InMemoryCheckpointer",),
            "tenxgraph.storage.checkpointer.postgres": ("PgCheckpointer",),
            "tenxgraph.storage.checkpointer.redis_cache": ("RedisThreadCache",),
            "tenxgraph.storage.checkpointer.sqlite": ("SqliteCheckpointer",),
        },
        moved=dict.fromkeys(("DEFAULT_USER", "ThreadKey", "run_config"), "tenxgraph.core.state"),
    )
