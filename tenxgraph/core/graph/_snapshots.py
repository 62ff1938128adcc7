"""Thread snapshots (as in Strands Agents) and threads started from an existing conversation.

A ``ThreadSnapshot`` is plain JSON data: the state's non-message fields and
the messages of its context window at one moment. Restoring one writes it as
a new checkpoint (compare-and-swap like every save); messages the log does
not have yet are appended to it, so the log stays append-only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from pydantic_core import PydanticSerializationError

from tenxgraph.core.graph._session import ThreadSession
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.core.state.pairing import pairing_violations
from tenxgraph.errors import StateError, ThreadNotFoundError
from tenxgraph.runs import ThreadLease
from tenxgraph.storage.checkpointer.base import Checkpointer, StoredThread
from tenxgraph.storage.checkpointer.state_codec import decode_state, encode_values

__all__ = ["ThreadSnapshot", "create_thread", "restore_snapshot", "take_snapshot"]

S = TypeVar("S", bound=AgentState)


class ThreadSnapshot(BaseModel):
    """A point-in-time copy of a thread's state and context window, as JSON data."""

    values: dict[str, Any]
    """The non-message state fields."""
    context: list[Message]
    """The context window's messages."""
    taken_at: float = Field(default_factory=time.time)
    """UNIX time the snapshot was taken."""
    version: int = 0
    """The thread version it was taken from (0 for a state that was never saved)."""

    @classmethod
    def of(cls, state: AgentState, version: int = 0) -> ThreadSnapshot:
        """Snapshot a state object (no checkpointer needed).

        A copy, not a view: changing ``state`` (or one of its messages) afterwards
        does not change the snapshot. Values are dumped as JSON data; messages are
        copied through their JSON form, the fastest complete copy pydantic offers.
        """
        values = encode_values(state)  # UnstorableStateError names a field JSON cannot carry
        context = MessagesAdapter.validate_json(MessagesAdapter.dump_json(state.context))
        return cls(values=values, context=context, version=version)

    def to_state(self, state_class: type[S]) -> S:
        """Rebuild the state through ``state_class`` (never a class named in the data).

        The state shares nothing with the snapshot: one snapshot can be restored
        many times, and running the restored state never changes it.
        """
        try:
            copy = self.model_validate_json(self.model_dump_json())
        except PydanticSerializationError as exc:
            raise StateError(f"snapshot values are not JSON data: {exc}") from None
        stored = StoredThread(ThreadKey("snapshot"), copy.version, 0, copy.values, [], copy.context)
        return decode_state(state_class, stored)


async def take_snapshot(checkpointer: Checkpointer, key: ThreadKey) -> ThreadSnapshot:
    """Snapshot a saved thread."""
    stored = await checkpointer.aload(key)
    if stored is None:
        raise ThreadNotFoundError(f"thread {key.thread_id!r} does not exist for {key.user_id!r}")
    return ThreadSnapshot(values=stored.values, context=stored.context, version=stored.version)


async def restore_snapshot(
    checkpointer: Checkpointer, key: ThreadKey, snapshot: ThreadSnapshot, state_class: type[S]
) -> int:
    """Make ``snapshot`` the thread's current state (a new checkpoint); return the version."""
    state = snapshot.to_state(state_class)
    session = ThreadSession(checkpointer, key)
    await session.load(state_class)
    await session.save(state, "restore_snapshot", state.execution_meta.step)
    return session.version


CREATE_NODE = "create_thread"
"""The node name of the first checkpoint of a thread ``ensure_thread`` created."""


async def create_thread(
    lease: ThreadLease,
    messages: Sequence[Message],
    state: S,
    *,
    metadata: dict[str, Any] | None = None,
    node: str = "initial_messages",
) -> ThreadSession:
    """Start the thread ``lease`` holds from an existing conversation, checked for call pairing.

    Only the last assistant message's calls may lack results: continuing the
    thread without new messages runs them first (see ``_entry``). ``node``
    labels the first checkpoint. The lease's stamp, read when it was taken,
    says whether the thread exists (no read here), and the save, made under
    the lease, gives it up (no release after); a thread that appeared
    meanwhile fails the save's compare-and-swap on version 0, writing nothing.
    Returns the session that saved it, holding the state as saved.
    """
    problems = pairing_violations(messages, allow_pending_tail=True)
    if problems:
        raise StateError(
            "initial messages break tool-call pairing: " + "; ".join(map(str, problems))
        )
    if lease.stamp is not None:
        raise StateError(f"thread {lease.key.thread_id!r} already exists")
    session = ThreadSession(lease.checkpointer, lease.key)
    session.lease = lease.owner
    session.record(state.append_messages(messages))
    await session.save(state, node, 0, metadata=metadata, release=True)
    lease.released = True
    return session
