"""A stored thread as a timeline: turns, tool calls, the window, summaries, checkpoints, forks.

Built from what the checkpointer keeps, without the graph or its state
class, so ``tenxgraph threads show --timeline`` and the coming web page draw
the same events. Each event sits at a position of the log (``seq``): markers
of the window and of summaries come before the message they name, a
checkpoint after the last message it saved.

What the stored data can tell, and so what the timeline shows:

- A turn starts at each user message.
- A tool call's duration is the time between the message that asked for it
  and its result (both carry the ``timestamp`` they were made at); without
  either timestamp, or without a result yet, there is none.
- Summaries and trims are seen between consecutive checkpoints: the window's
  start moved, with a new ``context_summary`` (a summary replaced those
  messages) or without one (trimmed); they sit where they happened, just
  before the checkpoint that recorded them. Checkpoints no longer kept
  (``keep_checkpoints``) hide the ones before them.
- Forks: the thread this one was forked from (its metadata), and the
  tenant's threads forked from this one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.tool_arguments import DIRECT_CALL_KEY
from tenxgraph.errors import ThreadNotFoundError
from tenxgraph.storage.checkpointer.base import Checkpoint, Checkpointer, StoredMessage, ThreadInfo

__all__ = ["ThreadTimeline", "TimelineEvent", "thread_timeline"]

EventKind = Literal[
    "forked_from",
    "turn",
    "message",
    "tool_call",
    "window_start",
    "summary",
    "trim",
    "checkpoint",
    "fork",
]

_ORDER: dict[str, int] = {
    "forked_from": 0,
    "window_start": 2,
    "turn": 3,
    "message": 4,
    "tool_call": 5,
    "summary": 6,
    "trim": 6,
    "checkpoint": 6,
    "fork": 7,
}
"""Where an event goes among those at the same seq (then by checkpoint version)."""

_PREVIEW = 60


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """One thing that happened on the thread, at a position of its log."""

    kind: EventKind
    seq: int
    """The log position: a marker sits before this message, a checkpoint after it (-1: before
    the first message)."""
    text: str
    """A short description for a text timeline."""
    at: float | None = None
    """UNIX time it happened, when stored."""
    duration: float | None = None
    """Seconds, for a tool call with a result and both timestamps."""
    data: dict[str, Any] = field(default_factory=dict)
    """The facts behind ``text`` (role, tool name, version, seqs...), JSON-ready."""


@dataclass(frozen=True, slots=True)
class ThreadTimeline:
    """A thread's events in log order; ``to_json()`` gives what a web page needs."""

    key: ThreadKey
    version: int
    log_length: int
    events: tuple[TimelineEvent, ...]

    def count(self, kind: EventKind) -> int:
        """How many events of ``kind`` there are."""
        return sum(1 for event in self.events if event.kind == kind)

    def to_json(self) -> dict[str, Any]:
        """The timeline as JSON-ready data."""
        return {
            "thread_id": self.key.thread_id,
            "user_id": self.key.user_id,
            "version": self.version,
            "log_length": self.log_length,
            "events": [
                {
                    "kind": e.kind,
                    "seq": e.seq,
                    "text": e.text,
                    "at": e.at,
                    "duration": e.duration,
                    "data": e.data,
                }
                for e in self.events
            ],
        }


async def thread_timeline(checkpointer: Checkpointer, key: ThreadKey) -> ThreadTimeline:
    """The thread's timeline; ``ThreadNotFoundError`` when it does not exist."""
    stored = await checkpointer.aload(key)
    if stored is None:
        raise ThreadNotFoundError(f"no thread {key.thread_id!r} for user {key.user_id!r}")
    log = await checkpointer.alist_messages(key)
    checkpoints = sorted(await checkpointer.alist_checkpoints(key), key=lambda c: c.version)
    children = await checkpointer.alist_threads(
        key.user_id, metadata={"forked_from": key.thread_id}
    )
    events = [
        *_origin(stored.metadata),
        *_messages(log),
        *_window(stored.window),
        *_context_changes(checkpoints),
        *_checkpoints(checkpoints),
        *_forks(children, checkpoints, log),
    ]
    events.sort(key=_position)
    return ThreadTimeline(key, stored.version, stored.log_length, tuple(events))


def _position(event: TimelineEvent) -> tuple[int, int, int, bool]:
    """Log order; a summary or trim just before the checkpoint that recorded it."""
    version = int(event.data.get("version") or 0) if event.kind != "fork" else 0
    return (event.seq, _ORDER[event.kind], version, event.kind == "checkpoint")


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 3] + "..."


def _origin(metadata: dict[str, Any]) -> list[TimelineEvent]:
    source = metadata.get("forked_from")
    if not source:
        return []
    version = metadata.get("forked_version")
    where = f"at version {version}" if version is not None else "as it was then"
    return [
        TimelineEvent(
            "forked_from",
            -1,
            f"forked from thread {source} {where}",
            data={"thread_id": source, "version": version},
        )
    ]


def _messages(log: Sequence[StoredMessage]) -> list[TimelineEvent]:
    """A turn marker at each user message, each message, and each tool call with its result."""
    results = {
        block.call_id: (item.seq, item.message, block.is_error)
        for item in log
        for block in item.message.tool_results()
    }
    events: list[TimelineEvent] = []
    turns = 0
    for item in log:
        message = item.message
        if message.role == "user":
            turns += 1
            events.append(
                TimelineEvent(
                    "turn", item.seq, f"turn {turns}", message.timestamp, data={"turn": turns}
                )
            )
        events.append(_message_event(item))
        events += [_call_event(item, call, results.get(call.id)) for call in message.tool_calls()]
    return events


def _message_event(item: StoredMessage) -> TimelineEvent:
    message = item.message
    text = message.text()
    names = ", ".join(call.name for call in message.tool_calls())
    direct = message.metadata.get(DIRECT_CALL_KEY) is True
    if direct and message.tool_calls():  # the application called the tool, not the model
        text = f"call_tool {names}"
    elif not text and names:
        text = "asks for " + names
    who = f"{message.role} (direct call)" if direct else message.role
    return TimelineEvent(
        "message",
        item.seq,
        f"{who}: {_preview(text) or '(no text)'}",
        message.timestamp,
        data={"role": message.role, "message_id": message.message_id},
    )


def _call_event(
    item: StoredMessage, call: Any, result: tuple[int, Message, bool] | None
) -> TimelineEvent:
    args = _preview(json.dumps(call.args, ensure_ascii=False)[1:-1])
    data: dict[str, Any] = {"call_id": call.id, "name": call.name, "result_seq": None}
    duration = None
    if result is None:
        outcome = "no result yet"
    else:
        seq, answer, failed = result
        data["result_seq"], data["is_error"] = seq, failed
        outcome = f"{'failed' if failed else 'answered'} at seq {seq}"
        if answer.timestamp is not None and item.message.timestamp is not None:
            duration = max(0.0, answer.timestamp - item.message.timestamp)
    return TimelineEvent(
        "tool_call",
        item.seq,
        f"tool {call.name}({args}): {outcome}",
        item.message.timestamp,
        duration,
        data,
    )


def _window(window: Sequence[tuple[int, int]]) -> list[TimelineEvent]:
    return [
        TimelineEvent(
            "window_start",
            start,
            f"context window: seqs {start}-{end - 1} (what the model sees next)",
            data={"start": start, "end": end},
        )
        for start, end in window
    ]


def _start(checkpoint: Checkpoint) -> int:
    return checkpoint.window[0][0] if checkpoint.window else checkpoint.log_length


def _context_changes(checkpoints: Sequence[Checkpoint]) -> list[TimelineEvent]:
    """Where the window's start moved between checkpoints: by a summary, or by a trim."""
    events = []
    for before, after in itertools.pairwise(checkpoints):
        old, new = _start(before), _start(after)
        if new <= old:
            continue
        summary = after.values.get("context_summary")
        replaced = summary and summary != before.values.get("context_summary")
        data: dict[str, Any] = {"from_seq": old, "to_seq": new, "version": after.version}
        seq = after.log_length - 1  # when it happened: with the checkpoint that recorded it
        if replaced:
            text = f"summary replaced seqs {old}-{new - 1}"
            data["summary"] = summary
            events.append(TimelineEvent("summary", seq, text, after.created_at, data=data))
        else:
            text = f"trimmed: seqs {old}-{new - 1} left the window"
            events.append(TimelineEvent("trim", seq, text, after.created_at, data=data))
    return events


def _checkpoints(checkpoints: Sequence[Checkpoint]) -> list[TimelineEvent]:
    return [
        TimelineEvent(
            "checkpoint",
            c.log_length - 1,
            f"checkpoint v{c.version} after {c.node} (step {c.step}): {_recorded(before, c)}",
            c.created_at,
            data={"version": c.version, "node": c.node, "step": c.step},
        )
        for before, c in zip([None, *checkpoints], checkpoints, strict=False)
    ]


def _recorded(before: Checkpoint | None, checkpoint: Checkpoint) -> str:
    """What a checkpoint recorded that the one before it had not, in a few words."""
    meta = checkpoint.values.get("execution_meta") or {}
    earlier = (before.values.get("execution_meta") or {}) if before is not None else {}
    added = checkpoint.log_length - (before.log_length if before is not None else 0)
    what = [f"+{added} message{'s' if added != 1 else ''}"] if added > 0 else []
    if checkpoint.node == "__start__":
        what = ["the turn's input" + (f", {what[0]}" if what else "")]
    starts = set(meta.get("tool_starts") or {}) - set(earlier.get("tool_starts") or {})
    results = set(meta.get("tool_ledger") or {}) - set(earlier.get("tool_ledger") or {})
    if starts:
        what.append(f"{len(starts)} tool call{'s' if len(starts) != 1 else ''} started")
    if results:
        what.append(f"{len(results)} tool result{'s' if len(results) != 1 else ''} kept")
    status = meta.get("status")
    if status != earlier.get("status") and status in _ENDED:
        what.append(_ENDED[status])
    return ", ".join(what) or "state only"


_ENDED = {
    "completed": "turn completed",
    "interrupted": "paused",
    "error": "failed",
    "stopped": "stopped",
}


def _forks(
    children: Sequence[ThreadInfo],
    checkpoints: Sequence[Checkpoint],
    log: Sequence[StoredMessage],
) -> list[TimelineEvent]:
    """Threads forked from this one, after the checkpoint they started from."""
    lengths = {c.version: c.log_length for c in checkpoints}
    events = []
    for child in sorted(children, key=lambda info: info.created_at):
        version = child.metadata.get("forked_version")
        if version in lengths:
            seq = lengths[version] - 1
        else:  # forked from the state of its time, or from a checkpoint no longer kept
            stamps = [item.seq for item in log if (item.message.timestamp or 0) <= child.created_at]
            seq = stamps[-1] if stamps else -1
        where = f"version {version}" if version is not None else "the state of its time"
        events.append(
            TimelineEvent(
                "fork",
                seq,
                f"forked into thread {child.key.thread_id} from {where}",
                child.created_at,
                data={"thread_id": child.key.thread_id, "version": version},
            )
        )
    return events
