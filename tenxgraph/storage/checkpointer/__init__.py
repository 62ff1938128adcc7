"""Checkpointers: durable threads behind one small contract."""

from tenxgraph.storage.checkpointer.base import (
    DEFAULT_USER,
    Checkpoint,
    Checkpointer,
    StoredMessage,
    StoredThread,
    ThreadInfo,
    ThreadKey,
    ThreadWrite,
    Window,
)

__all__ = [
    "DEFAULT_USER",
    "Checkpoint",
    "Checkpointer",
    "StoredMessage",
    "StoredThread",
    "ThreadInfo",
    "ThreadKey",
    "ThreadWrite",
    "Window",
]
