"""Checkpointers: durable threads behind one small contract.

``InMemoryCheckpointer`` and ``SqliteCheckpointer`` need only the standard
library; ``PgCheckpointer`` (extra ``postgres``) and ``RedisThreadCache``
(extra ``redis``) are imported on first access, so importing this package
never needs psycopg or redis.

Retention: ``keep_checkpoints=N`` (every backend) deletes, on each save,
the thread's checkpoints older than its newest N. The newest checkpoint is
always kept, and resuming a run paused at an interrupt needs only the
thread's state row (values and window), which is never pruned; the log of
messages is never pruned either. Only time travel to older checkpoints is
lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenxgraph.storage.checkpointer.base import (
    DEFAULT_USER,
    Checkpoint,
    Checkpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
    ThreadKey,
    ThreadStamp,
    ThreadWrite,
    Window,
    run_config,
)
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.storage.checkpointer.sqlite import SqliteCheckpointer

if TYPE_CHECKING:
    from tenxgraph.storage.checkpointer.postgres import PgCheckpointer
    from tenxgraph.storage.checkpointer.redis_cache import RedisThreadCache

__all__ = [
    "DEFAULT_USER",
    "Checkpoint",
    "Checkpointer",
    "InMemoryCheckpointer",
    "PgCheckpointer",
    "RedisThreadCache",
    "SqliteCheckpointer",
    "StoredMessage",
    "StoredThread",
    "ThreadInfo",
    "ThreadKey",
    "ThreadStamp",
    "ThreadWrite",
    "Window",
    "run_config",
]

_LAZY = {
    "PgCheckpointer": "tenxgraph.storage.checkpointer.postgres",
    "RedisThreadCache": "tenxgraph.storage.checkpointer.redis_cache",
}


def __getattr__(name: str) -> Any:
    """Import the Postgres and Redis backends on first access."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
