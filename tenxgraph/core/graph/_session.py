"""A run's link to its stored thread: which log entry each context message is.

Saving a step appends only the messages the step added and rewrites the
small state row, so its cost does not depend on the thread's length. When
the context was only appended to since the last save, the window is extended
in O(1); after a trim or summary it is recomputed from the (short) context.

The session knows the thread by its stamp, incarnation and version: every
save is compare-and-swap on both, so a session holding a thread that was
deleted and re-created since (a new incarnation, whatever its version) gets
``ConflictError`` and writes nothing.

Stored fields that the loading graph's state class does not declare (a
thread shared by graphs with different state classes) are carried through
every save unchanged, so a graph never erases another graph's fields.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TypeVar

from pydantic import BaseModel

from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import TextBlock
from tenxgraph.core.state.reducers import MessageIndex
from tenxgraph.errors import ThreadNotFoundError, UnstorableStateError
from tenxgraph.storage.checkpointer.base import (
    Checkpointer,
    StoredThread,
    ThreadStamp,
    ThreadWrite,
    Window,
)
from tenxgraph.storage.checkpointer.state_codec import (
    decode_state,
    encode_row,
    encode_values,
    values_text,
)

__all__ = ["ThreadSession", "approx_bytes"]


def _hold_stored(context: list[Message], sent: list[Message], stored: list[Message]) -> None:
    """Put in ``context`` the form the checkpointer stored of each message it changed.

    A checkpointer with a media store stores large inline media as
    ``graph://media`` refs; holding those (in the state, and in the warm
    thread the compiled graph keeps) frees the bytes, and the thread reads
    the same whether warm or reloaded. Same ids and roles: the index holds.
    """
    replaced = {id(a): b for a, b in zip(sent, stored, strict=True) if a is not b}
    for position, message in enumerate(context):
        if id(message) in replaced:
            context[position] = replaced[id(message)]


S = TypeVar("S", bound=AgentState)


class ThreadSession:
    """Loads a thread, then saves it step by step with compare-and-swap."""

    def __init__(self, checkpointer: Checkpointer, key: ThreadKey) -> None:
        self.checkpointer = checkpointer
        self.key = key
        self.incarnation = ""
        """The thread's identity, from the load or the first save ("" before either)."""
        self.version = 0
        self.log_length = 0
        self.metadata: dict[str, Any] = {}
        self._seq_of: dict[str | int, int] = {}
        self._loaded: tuple[list[Message], Window] | None = None
        """The loaded context (a copy) and window, until ``_seq_map`` maps their seqs."""
        self._pending: list[Message] = []
        self._window: Window = []
        self._window_list: list[Message] | None = None
        self._window_size = 0
        self._window_last: Message | None = None
        self._values: dict[str, Any] | None = None
        """The stored values of the state held, as data (None: see ``_values_text``)."""
        self._values_text: str | None = None
        """The last save's values as text, when the save did not need them as data (the
        usual, plain row): decoded only if they are read (``_saved_values``)."""
        self._undeclared: dict[str, Any] = {}
        self._bytes = 0
        """``approx_bytes`` of the context messages sized so far."""
        self._unsized: list[Message] = []
        """Context messages saved since, sized only when ``approx_bytes`` is read (once a run)."""
        self.created = False
        """Opened for a thread that did not exist yet (``WarmThreads.open``): not kept warm."""
        self.lease: str | None = None
        """The owner of the thread lease the saves are made under (fences every save)."""
        self._private: dict[str, Any] | None = None
        """The private data of the state last loaded, saved or revived, which holds the index
        of its context (``AgentState.message_index``): read only by ``revive``."""
        self.branch_from: int | None = None
        """The older checkpoint the loaded state is, until the next save records it as
        that save's parent (a branch inside the thread); None for the current state."""
        self._metadata_changes: dict[str, Any] | None = None
        """Metadata the next save merges into the thread's (``merge_metadata``)."""

    @property
    def stamp(self) -> ThreadStamp:
        """The incarnation and version this session holds (compare with ``aversion``)."""
        return ThreadStamp(self.incarnation, self.version)

    @property
    def approx_bytes(self) -> int:
        """An estimate of the bytes the context messages hold (``approx_bytes`` of each)."""
        if self._unsized:
            self._bytes += sum(map(approx_bytes, self._unsized))
            self._unsized = []
        return self._bytes

    @property
    def base(self) -> int:
        """The checkpoint whose state the session holds: the branch point, else the version."""
        return self.version if self.branch_from is None else self.branch_from

    async def load(self, state_class: type[S], at: int | None = None) -> S | None:
        """Load the thread's state, or None when the thread does not exist yet.

        ``at``: start from checkpoint ``at`` instead of the current state. The
        state is that checkpoint's (values and window; the log is not copied),
        the stamp the thread's current one, so the next save is compare-and-swap
        on the current version and records ``at`` as its parent: the thread
        branches there, and the branch left stays in the log and the history.
        ``ThreadNotFoundError`` when the thread has no checkpoint ``at``.
        """
        stored = await self.checkpointer.aload(self.key)
        if stored is None:
            if at is not None:
                raise self._no_checkpoint(at)
            return None
        if at is not None and at != stored.version:
            stored = await self._branched(stored, at)
            self.branch_from = at
        state = decode_state(state_class, stored)
        self.incarnation = stored.incarnation
        self.version = stored.version
        self.log_length = stored.log_length
        self.metadata = stored.metadata
        self._seq_of, self._loaded = {}, (list(state.context), stored.window)
        self._values = stored.values
        fields = state_class.model_fields
        self._undeclared = {k: v for k, v in stored.values.items() if k not in fields}
        self._remember_window(state.context, [(start, end) for start, end in stored.window])
        self._private = state.__pydantic_private__  # decode_state indexed the context
        if stored.context_chars is None:
            self._bytes = sum(map(approx_bytes, state.context))
        else:
            self._bytes = stored.context_chars + len(state.context) * _STORED_EXTRA_BYTES
        return state

    async def _branched(self, current: StoredThread, at: int) -> StoredThread:
        """``current`` (the thread's row) with checkpoint ``at``'s values, window and messages."""
        checkpoint = await self.checkpointer.aget_checkpoint(self.key, at)
        if checkpoint is None:
            raise self._no_checkpoint(at)
        return StoredThread(
            key=self.key,
            version=current.version,
            log_length=current.log_length,
            values=checkpoint.values,
            window=checkpoint.window,
            context=await self.checkpointer.aload_messages(self.key, checkpoint.window),
            metadata=current.metadata,
            incarnation=current.incarnation,
        )

    def _no_checkpoint(self, at: int) -> ThreadNotFoundError:
        key = self.key
        return ThreadNotFoundError(
            f"thread {key.thread_id!r} (user {key.user_id!r}) has no checkpoint {at} to "
            "start from (never saved, or dropped by keep_checkpoints)"
        )

    def revive(self, state_class: type[S]) -> S | None:
        """Rebuild the state as this session last saved it, without reading storage.

        Only valid while the stored stamp is still ``self.stamp`` (the caller
        checks). Returns None when the saved context list was changed since.
        The context list and its index are handed to the new state: the list is
        copied only while something else (the last run's result) still holds it,
        and the index moves over whole, so a turn costs the same at 100,000
        messages as at 10.
        """
        context, values = self._window_list, self._saved_values()
        if context is None or values is None or len(context) != self._window_size:
            return None
        if context and context[-1] is not self._window_last:
            return None
        index = self._held_index()
        self._window_list = self._private = None  # not counted as holders below
        state = state_class.model_validate(values)
        if _shared(context, index):
            context = list(context)
        moved = index.hand_over(context) if index is not None and not index.retired else None
        state.set_context(context, moved)
        self._window_list, self._private = context, state.__pydantic_private__
        return state

    def _held_index(self) -> MessageIndex | None:
        """The index of the held context list, or None (then rebuilt when first used)."""
        private, context = self._private, self._window_list
        index: MessageIndex | None = private.get("_index") if private else None
        if index is None or context is None or not index.covers(context):
            return None
        return index

    def _restore(self, state: AgentState, fields: list[str]) -> None:
        """Put ``fields`` back to their last saved values (defaults before the first save).

        Runs only when a save found them unstorable, so the run can still save
        that it failed without writing, or losing, anything else.
        """
        declared = type(state).model_fields
        saved = None
        values = self._saved_values()
        if values is not None:
            stored = {k: v for k, v in values.items() if k in declared}  # no "context" in it
            saved = type(state).model_validate(stored)
        for name in fields:
            if saved is not None:
                setattr(state, name, getattr(saved, name))
            else:
                setattr(state, name, declared[name].get_default(call_default_factory=True))

    def merge_metadata(self, changes: dict[str, Any]) -> None:
        """Merge ``changes`` into the thread's metadata with the next save (none if all match)."""
        if any(k not in self.metadata or self.metadata[k] != v for k, v in changes.items()):
            self._metadata_changes = changes

    def record(self, messages: list[Message]) -> None:
        """Queue messages added to the thread; the next save appends them to the log."""
        self._pending.extend(messages)

    async def save(
        self,
        state: AgentState,
        node: str,
        step: int,
        *,
        release: bool = False,
        metadata: dict[str, Any] | None = None,
        take: float | None = None,
    ) -> None:
        """Write the queued messages and the state row as one compare-and-swap step.

        ``release`` gives the session's lease up with the write (the run's last save);
        ``take`` takes it for that many seconds with the write (``ThreadWrite.take_lease``);
        ``metadata``, when given, replaces the thread's (else changes asked by
        ``merge_metadata`` are merged into it).
        """
        if metadata is None and self._metadata_changes is not None:
            metadata = {**self.metadata, **self._metadata_changes}
        new = self._pending
        base = self.log_length
        context = state.context  # looked up once
        window = self._extended_window(context, new, base)  # pragma: no mutate (speed only)
        extended = window is not None
        if window is None:
            window = self._full_window(context, new, base)
        values: dict[str, Any] | None
        try:
            if self._undeclared:
                values = {**self._undeclared, **encode_values(state)}
                text = values_text(values, type(state).__name__)
            else:
                values, text = encode_row(state)
        except UnstorableStateError as exc:
            self._restore(state, exc.fields)
            raise
        sent = new.copy()
        self.incarnation, self.version = await self.checkpointer.asave(
            self.key,
            ThreadWrite(  # by position, every field in order: half the cost of keywords
                self.version,  # expected_version
                new,  # new_messages
                text,  # values
                window,
                node,
                step,
                metadata,
                self.incarnation or None,  # expected_incarnation
                self.lease,  # lease
                release and self.lease is not None,  # release_lease
                self.branch_from,  # parent_version
                take,  # take_lease
            ),
        )
        self.branch_from = None
        if metadata is not None:
            self.metadata, self._metadata_changes = metadata, None
        if new != sent:  # identical objects compare equal without a field compare
            _hold_stored(context, sent, new)
        self._values, self._values_text = values, text
        self._private = state.__pydantic_private__  # its index, looked up only by revive
        if extended:
            self._unsized += new
        else:
            self._bytes, self._unsized = 0, list(context)
        self.log_length = base + len(new)
        self._pending = []
        self._remember_window(context, window)

    def _saved_values(self) -> dict[str, Any] | None:
        """The held state's stored values as data (None before any load or save)."""
        if self._values is None and self._values_text is not None:
            self._values = json.loads(self._values_text)  # the text of JSON data: an equal copy
        return self._values

    def _assign_seqs(self, new: list[Message], base: int) -> None:
        seq_of = self._seq_of
        for offset, message in enumerate(new):
            seq_of[message.message_id] = base + offset

    def _extended_window(
        self, context: list[Message], new: list[Message], base: int
    ) -> Window | None:
        """O(len(new)): the window when ``context`` only grew by ``new`` since the last save.

        With it, the seqs of ``new`` are assigned (``_assign_seqs``).
        """
        if context is not self._window_list or len(context) != self._window_size + len(new):
            return None
        if new and context[-1] is not new[-1]:
            return None
        window = list(self._window)
        if not new:
            return window
        self._assign_seqs(new, base)
        if window and window[-1][1] == base:
            window[-1] = (window[-1][0], base + len(new))
        else:
            window.append((base, base + len(new)))
        return window

    def _full_window(self, context: list[Message], new: list[Message], base: int) -> Window:
        """O(len(context)): map every context message to its seq, logging unseen ones."""
        self._assign_seqs(new, base)
        seq_of = self._seq_map()
        for message in context:
            if message.message_id not in seq_of:
                seq_of[message.message_id] = base + len(new)
                new.append(message)
        window: Window = []
        for message in context:
            seq = seq_of[message.message_id]
            if window and window[-1][1] == seq:
                window[-1] = (window[-1][0], seq + 1)
            else:
                window.append((seq, seq + 1))
        return window

    def _seq_map(self) -> dict[str | int, int]:
        """The seq of each message loaded or saved; the loaded ones are mapped on first need.

        A run that only appends (most do) never needs them: its window grows in O(1).
        """
        if self._loaded is not None:
            context, window = self._loaded
            seqs = (seq for start, end in window for seq in range(start, end))
            loaded = {m.message_id: seq for m, seq in zip(context, seqs, strict=False)}
            loaded.update(self._seq_of)  # seqs assigned since the load come later in the log
            self._seq_of, self._loaded = loaded, None
        return self._seq_of

    def _remember_window(self, context: list[Message], window: Window) -> None:
        """Hold ``window`` for ``context``: a list the session made and never changes in place.

        A save hands the same list to the checkpointer, which only reads it.
        """
        self._window = window
        self._window_list = context
        self._window_size = len(context)
        self._window_last = context[-1] if context else None


def _shared(context: list[Message], index: MessageIndex | None) -> bool:
    """True when anything but ``revive``'s own references holds ``context``.

    A CPython reference count: ``revive``'s local name, this call's argument,
    ``getrefcount``'s own argument, and the index's reference to the list it
    covers. Anything more is a holder outside the session (a result's state,
    a caller's variable), so the list must not be changed under it.
    """
    # no mutate: mutmut's trampoline holds arguments too; test_warm_threads.py reads the count
    own = 3 + (index is not None and index.covers(context))  # pragma: no mutate
    return sys.getrefcount(context) > own  # pragma: no mutate


def approx_bytes(message: Message) -> int:
    """A cheap estimate of the memory ``message`` holds, for bounding the warm-thread cache.

    Large payloads (text, inline base64 media, tool outputs and arguments)
    live in the string fields of the content blocks, so those are counted;
    the objects around them are fixed allowances, measured with tracemalloc
    on CPython 3.11 (a one-block text message holds about 1.5 KB). It looks
    one level into nested objects only, so a thread of 10,000 short messages
    is estimated in a few milliseconds.
    """
    fields = message.__dict__  # one attribute lookup on the model, not one per field
    size = _MESSAGE_BYTES if fields["usages"] is None else _MESSAGE_BYTES + _USAGES_BYTES
    for block in fields["content"]:  # text blocks, by far the most common, take a short cut
        size += _BLOCK_BYTES + len(block.text) if type(block) is TextBlock else _block_bytes(block)
    return size


_MESSAGE_BYTES = 1_000
"""The message object, its ids, timestamp, metadata dict and content list."""

_BLOCK_BYTES = 550
"""A content block object and its small fields."""

_USAGES_BYTES = 600
"""A ``TokenUsages`` record."""

_STORED_EXTRA_BYTES = _MESSAGE_BYTES + _BLOCK_BYTES - 130
"""Per loaded message, added to its stored JSON length to estimate what ``approx_bytes``
would: the JSON holds the same strings plus about 130 characters of keys, id and
timestamp for a one-block message."""


def _block_bytes(block: BaseModel) -> int:
    size = _BLOCK_BYTES
    for value in block.__dict__.values():
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, BaseModel):  # a MediaRef holding inline data
            size += sum(len(v) for v in value.__dict__.values() if isinstance(v, str))
        elif isinstance(value, dict | list) and value:  # tool arguments and outputs
            size += len(repr(value))
    return size
