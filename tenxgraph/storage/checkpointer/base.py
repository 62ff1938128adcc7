"""The checkpointer contract: a handful of typed async methods every backend implements.

Storage layout (history is append-only): a thread is an append-only log of
messages, numbered from 0 (``seq``), plus one small state row holding the
non-message fields (``values``), the context *window* (which log entries form
``state.context``, as half-open ``[start, end)`` ranges of seqs) and a
version. A save appends only the new messages and rewrites only the small
row, so its cost does not grow with the thread.

A thread's identity is its *incarnation*: a random id made when the thread is
created, kept by every save and new again when the thread is deleted and
created anew, whose versions restart at 1. Every save is compare-and-swap on
the incarnation and the version together (invariant 7): a save whose
``expected_incarnation`` and ``expected_version`` are not the stored ones
raises ``ConflictError`` and writes nothing, so a writer that still holds a
deleted thread never writes over its successor, whatever version that has
reached. Stored data is JSON only (invariant 3).

Who runs on a thread is not part of this contract: leases are the
``ThreadLeases`` contract (``tenxgraph.storage.leases``), a capability a
backend may add. The fields of a save that name a lease (``ThreadWrite.lease``,
``release_lease`` and ``take_lease``, ``arewind``'s ``lease``) are honoured by backends that
are also ``ThreadLeases``, in the save's own transaction, and ignored by
those that are not.

Sync callers use the ``get_state``-style wrappers of ``SyncCheckpointerMixin``;
backends implement only the async methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tenxgraph._sync import run_sync
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import DEFAULT_USER, ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConfigError
from tenxgraph.storage._closing import Closing

__all__ = [
    "LEGACY_INCARNATION",
    "Checkpoint",
    "Checkpointer",
    "StoredMessage",
    "StoredThread",
    "ThreadInfo",
    "ThreadStamp",
    "ThreadWrite",
    "Window",
    "check_keep",
    "check_limit",
    "check_page",
]

LEGACY_INCARNATION = "legacy"
"""The incarnation of threads stored before incarnations existed (set by a migration)."""


Window = list[tuple[int, int]]
"""Half-open ranges of log seqs, in order, that make up ``state.context``."""


class ThreadStamp(NamedTuple):
    """Which state of which thread: its incarnation and its version.

    Two stamps are equal only for the same version of the same incarnation,
    so a thread deleted and saved again up to the same version has a
    different stamp.
    """

    incarnation: str
    """The thread's identity: made when it is created, new when it is re-created."""
    version: int
    """The number of saves of this incarnation (1 after the first)."""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message of the log with its position."""

    seq: int
    message: Message


@dataclass(slots=True)
class StoredThread:
    """A thread as loaded: its state row plus the messages of its context window."""

    key: ThreadKey
    version: int
    log_length: int
    """Number of messages in the log; the next appended message gets this seq."""
    values: dict[str, Any]
    """Non-message state fields as JSON (``context_summary``, ``execution_meta``, custom)."""
    window: Window
    context: list[Message]
    """The messages of ``window``, in order."""
    metadata: dict[str, Any] = field(default_factory=dict)
    incarnation: str = ""
    """The thread's identity (see ``ThreadStamp``); "" for a state never stored."""
    context_chars: int | None = None
    """The length of the context's stored JSON, when the backend read it as text (a size
    hint for the warm-thread cache, free where the rows were read anyway); None if not."""

    @property
    def stamp(self) -> ThreadStamp:
        """The incarnation and version, as ``aversion`` reports them."""
        return ThreadStamp(self.incarnation, self.version)


@dataclass(slots=True)
class ThreadWrite:
    """One compare-and-swap save: new log entries plus the new state row."""

    expected_version: int
    """The version this write was based on; 0 creates the thread."""
    new_messages: list[Message]
    """Appended to the log with seqs ``log_length, log_length + 1, ...``. A checkpointer
    that stores a message in another form (``media=``: large inline media as
    ``graph://media`` refs) puts that form in its place in this list."""
    values: dict[str, Any] | str
    """The non-message fields as JSON data, or as the JSON text of that object (the
    runtime encodes them once, in Rust; backends store the text as given)."""
    window: Window
    node: str
    """The node whose step this write records (the checkpoint's label)."""
    step: int
    metadata: dict[str, Any] | None = None
    """Replaces the thread's metadata when not None."""
    expected_incarnation: str | None = None
    """The incarnation this write was based on (``StoredThread.incarnation`` or the
    stamp the previous save returned); required unless ``expected_version`` is 0,
    when it must be None or "" (creating a thread makes a new incarnation)."""
    lease: str | None = None
    """The owner of the lease this write is made under; when set, a backend that is also a
    ``ThreadLeases`` raises ``ThreadBusyError`` and writes nothing unless the thread's lease
    is still this owner's (expired but not taken by anyone else counts as still held),
    checked in the save's own transaction. A backend without leases ignores it."""
    release_lease: bool = False
    """With ``lease``: give the lease up with this write, as ``ThreadLeases.arelease_lease``
    would (a run's last save), saving the runtime a round trip; nothing is released if the
    write fails. Ignored, like ``lease``, by a backend without leases."""
    parent_version: int | None = None
    """The checkpoint this write's state continues from, when it is not the thread's current
    one: a branch inside the thread (its state row goes back to that checkpoint's values and
    window; the log keeps every message). None: ``expected_version``, a linear save. 0: no
    parent (a new root). Recorded as the new checkpoint's ``parent_version``."""
    take_lease: float | None = None
    """With ``lease``: take that lease for this many seconds in the write's own transaction
    (as ``ThreadLeases.atake_lease``: when it is free, expired or already the owner's)
    instead of finding it held; when another run holds it, ``ThreadBusyError`` and nothing
    is written or taken. Only a backend whose ``ThreadLeases.saves_take_leases`` is True
    does this; others ignore it, and their fence then refuses the write unless the lease is
    held already."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A past version of a thread: enough to rebuild its state at that point."""

    version: int
    node: str
    step: int
    log_length: int
    values: dict[str, Any]
    window: Window
    created_at: float
    parent_version: int | None = None
    """The checkpoint this one continues from: ``version - 1`` along a run, an older one
    where a branch (or a rollback) starts, None for a thread's first checkpoint. The
    checkpoints of a thread form a tree by it; the newest is the current branch's head."""


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """A line of a thread listing."""

    key: ThreadKey
    version: int
    log_length: int
    metadata: dict[str, Any]
    created_at: float
    updated_at: float


class Checkpointer(Closing, ABC):
    """Durable threads. Backends implement these async methods and nothing else."""

    async def aget_state(
        self, config: Mapping[str, Any], state_class: type[AgentState] = AgentState
    ) -> AgentState | None:
        """The thread's state (``config`` holds ``thread_id`` and optionally ``user_id``).

        A checkpointer serves any number of graphs, so it knows no state class
        of its own: pass the graph's class (or use the graph's ``get_state``) to
        read custom fields. Stored fields the class does not declare are left
        out of the result, and stay stored.
        """
        from tenxgraph.storage.checkpointer.state_codec import decode_state

        stored = await self.aload(ThreadKey.from_config(config))
        if stored is None:
            return None
        return decode_state(state_class, stored)

    def get_state(
        self, config: Mapping[str, Any], state_class: type[AgentState] = AgentState
    ) -> AgentState | None:
        """Sync ``aget_state``."""
        return run_sync(self.aget_state(config, state_class))

    @abstractmethod
    async def aload(self, key: ThreadKey) -> StoredThread | None:
        """Load a thread's state row and context messages, or None if it does not exist."""

    @abstractmethod
    async def asave(self, key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        """Apply ``write`` if the thread is at its expected incarnation and version.

        Returns the thread's new stamp (a new incarnation when the write
        created the thread). Otherwise raises ``ConflictError`` and writes
        nothing; its ``recreated`` is True when the thread was deleted and
        created anew since the write's state was read.
        """

    @abstractmethod
    async def alist_messages(
        self, key: ThreadKey, *, offset: int = 0, limit: int | None = None
    ) -> list[StoredMessage]:
        """The thread's whole log in seq order, including messages outside the window."""

    @abstractmethod
    async def alist_threads(
        self,
        user_id: str = DEFAULT_USER,
        *,
        metadata: Mapping[str, Any] | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[ThreadInfo]:
        """The tenant's threads, newest first, whose metadata contains ``metadata``."""

    async def athread_info(self, key: ThreadKey) -> ThreadInfo | None:
        """One thread's listing line (metadata, created and updated times), or None.

        The default pages through ``alist_threads``; backends override it with
        a one-row query. The server reads it for every thread it shows.
        """
        offset = 0
        while True:
            page = await self.alist_threads(key.user_id, offset=offset, limit=500)
            for info in page:
                if info.key == key:
                    return info
            if len(page) < 500:
                return None
            offset += len(page)

    async def alist_tenants(self) -> dict[str, int] | None:
        """Every tenant (``user_id``) holding threads, with how many; None if it cannot say.

        For an operator's tools that see the whole store: the CLI tells a user
        who found nothing under one ``--user`` which users hold threads. Never
        answer a request one tenant made with it. The default cannot say;
        tenxgraph's backends answer with one query.
        """
        return None

    @abstractmethod
    async def adelete_thread(self, key: ThreadKey) -> bool:
        """Delete a thread and everything of it; False if it did not exist.

        Unfenced: it deletes whoever holds the thread's lease (a run that
        holds it then fails its next save with ``ConflictError``). A graph's
        ``adelete_thread`` takes the thread's lease first and refuses while a
        run holds it; use that one beside running graphs.
        """

    @abstractmethod
    async def alist_checkpoints(
        self, key: ThreadKey, *, limit: int | None = None
    ) -> Sequence[Checkpoint]:
        """The thread's checkpoints, newest first."""

    async def aget_checkpoint(self, key: ThreadKey, version: int) -> Checkpoint | None:
        """The thread's checkpoint ``version``, or None (never saved, pruned, or no thread).

        The default searches ``alist_checkpoints``; tenxgraph's backends read one row, so
        branching from an old checkpoint costs the same on a long thread as on a short one.
        """
        for checkpoint in await self.alist_checkpoints(key):
            if checkpoint.version == version:
                return checkpoint
        return None

    @abstractmethod
    async def aload_messages(self, key: ThreadKey, window: Window) -> list[Message]:
        """The log messages of ``window``, in order (used to rebuild a past checkpoint)."""

    @abstractmethod
    async def arewind(
        self, key: ThreadKey, stamp: ThreadStamp, to_version: int, *, lease: str | None = None
    ) -> ThreadStamp | None:
        """Return the thread to its checkpoint ``to_version``, discarding what came after.

        Compare-and-swap on ``stamp`` (``ConflictError`` otherwise, nothing
        changed). The log is cut back to that checkpoint's length, the later
        checkpoints are deleted, and the state row becomes the checkpoint's,
        as a new version (``stamp.version + 1``: versions never go back, so a
        writer holding a discarded version still conflicts). ``to_version`` 0
        deletes the thread and returns None. The new checkpoint's ``parent_version`` is
        ``to_version``. This is the one operation that removes log entries: it
        exists to discard a turn that did not finish.
        Raises ``StateError`` when the checkpoint is no longer kept
        (``keep_checkpoints``). ``lease`` fences it like ``ThreadWrite.lease`` (on a
        backend that is also a ``ThreadLeases``).
        """

    async def aversion(self, key: ThreadKey) -> ThreadStamp | None:
        """The thread's current stamp, or None; lets a runtime reuse a state it still holds.

        A held state is current only if its incarnation and version both
        match. The default loads the thread; backends override it with a
        one-row query.
        """
        stored = await self.aload(key)
        return None if stored is None else stored.stamp

    async def aclose(self) -> None:
        """Release connections and files; a later call opens them again."""


def check_keep(keep_checkpoints: int | None) -> None:
    """Reject a retention that would keep no checkpoint (a backend's ``keep_checkpoints``)."""
    if keep_checkpoints is not None and keep_checkpoints < 1:
        raise ConfigError(f"keep_checkpoints must be >= 1 or None, got {keep_checkpoints}")


def check_page(offset: int, limit: int | None) -> None:
    """Reject a negative ``offset`` or ``limit`` of a listing, with a clear message."""
    if offset < 0:
        raise ConfigError(f"offset must be >= 0, got {offset}")
    check_limit(limit)


def check_limit(limit: int | None) -> None:
    """Reject a negative ``limit`` of a listing that takes no offset (the checkpoints')."""
    if limit is not None and limit < 0:
        raise ConfigError(f"limit must be >= 0 or None, got {limit}")
