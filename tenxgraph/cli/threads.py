"""``tenxgraph threads``: list, show, export and delete the threads of a checkpointer.

These commands read stored data only, so they work without the graph or
its state class: custom state fields are shown as the JSON they are saved as.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.prompt import Reader, read_line, stdin_is_terminal
from tenxgraph.cli.render import Console
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import MessagesAdapter
from tenxgraph.storage.checkpointer.base import Checkpointer, StoredThread
from tenxgraph.storage.timeline import TimelineEvent, thread_timeline

__all__ = [
    "confirm_delete",
    "delete_thread",
    "export_thread",
    "list_threads",
    "load_thread",
    "show_log",
    "show_state",
    "show_summary",
    "show_thread",
    "show_timeline",
]

_RUNTIME_VALUES = ("context_summary", "execution_meta")
_EMPTY: tuple[Any, ...] = (None, "", {}, [])
"""State values not worth a line (unset fields); ``export`` still includes them."""


async def list_threads(checkpointer: Checkpointer, user: str, console: Console) -> int:
    """Print the user's threads, newest first; return how many there are."""
    threads = await checkpointer.alist_threads(user)
    if not threads:
        console.note(f"no threads for user {user!r}" + await _elsewhere(checkpointer, user))
        return 0
    console.line(f"{'thread':<24} {'messages':>8} {'version':>7}  updated", "bold")
    for info in threads:
        updated = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.updated_at))
        console.line(f"{info.key.thread_id:<24} {info.log_length:>8} {info.version:>7}  {updated}")
    return len(threads)


async def load_thread(checkpointer: Checkpointer, key: ThreadKey) -> StoredThread:
    """The stored thread, or a ``CliError`` naming the thread and the user."""
    stored = await checkpointer.aload(key)
    if stored is None:
        hint = await _elsewhere(checkpointer, key.user_id, key.thread_id)
        raise CliError(f"no thread {key.thread_id!r} for user {key.user_id!r}{hint}")
    return stored


async def _elsewhere(checkpointer: Checkpointer, user: str, thread_id: str | None = None) -> str:
    """A hint naming the other users that hold threads (that thread, if given), or ""."""
    tenants = await checkpointer.alist_tenants() or {}
    others = sorted(name for name in tenants if name != user)
    if thread_id is not None:
        found = [u for u in others[:100] if await checkpointer.aversion(ThreadKey(thread_id, u))]
        return f"; user {found[0]!r} has it: add --user {found[0]}" if found else ""
    if not others:
        return ""
    shown = ", ".join(f"{name!r} ({tenants[name]})" for name in others[:5])
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return f"; threads are saved per user: {shown}{more} hold some (pick one with --user)"


def window_seqs(stored: StoredThread) -> set[int]:
    """The log seqs that make up the context window."""
    return {seq for start, end in stored.window for seq in range(start, end)}


async def show_thread(checkpointer: Checkpointer, key: ThreadKey, console: Console) -> None:
    """Print the thread: its state, its summary and the whole log, marking the window."""
    stored = await load_thread(checkpointer, key)
    in_window = window_seqs(stored)
    console.line(
        f"thread {key.thread_id} (user {key.user_id}) - version {stored.version}, "
        f"{stored.log_length} messages in the log, {len(in_window)} in the context window",
        "bold",
    )
    show_state(stored, console)
    show_summary(stored, console)
    console.line()
    await show_log(checkpointer, stored, console)


_TIMELINE_STYLES = {
    "forked_from": ("<", "magenta"),
    "turn": ("==", "bold"),
    "message": ("", ""),
    "tool_call": ("->", "cyan"),
    "window_start": ("[", "green"),
    "summary": ("~", "yellow"),
    "trim": ("~", "yellow"),
    "checkpoint": ("v", "dim"),
    "fork": (">", "magenta"),
}


async def show_timeline(checkpointer: Checkpointer, key: ThreadKey, console: Console) -> None:
    """Print the thread as a timeline: turns, tool calls, window, summaries, checkpoints, forks."""
    await load_thread(checkpointer, key)  # a missing thread is a CliError
    timeline = await thread_timeline(checkpointer, key)
    console.line(
        f"timeline of thread {key.thread_id} (user {key.user_id}) - version {timeline.version}, "
        f"{timeline.log_length} messages, {timeline.count('turn')} turns, "
        f"{timeline.count('tool_call')} tool calls, {timeline.count('checkpoint')} checkpoints",
        "bold",
    )
    console.note("  seq      time  (checkpoints come after the message they saved)")
    for event in timeline.events:
        console.line(_timeline_line(event, console))


def _timeline_line(event: TimelineEvent, console: Console) -> str:
    mark, style = _TIMELINE_STYLES[event.kind]
    after = event.kind in ("checkpoint", "fork", "summary", "trim") or event.seq < 0
    seq = "" if after else str(event.seq)
    clock = time.strftime("%H:%M:%S", time.localtime(event.at)) if event.at is not None else ""
    text = event.text
    if event.duration is not None:
        text += f" ({_seconds(event.duration)})"
    body = f"{mark} {text}" if mark else text
    indent = "    " if event.kind in ("message", "tool_call") else "  "
    return f"{seq:>5} {clock:>9}{indent}{console.paint(body, style) if style else body}"


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


async def show_log(checkpointer: Checkpointer, stored: StoredThread, console: Console) -> None:
    """Print every message of the log with its seq, marking those in the context window."""
    in_window = window_seqs(stored)
    console.note("* = in the context window (what the model sees next); . = only in the log")
    for item in await checkpointer.alist_messages(stored.key):
        mark = console.paint("*", "green") if item.seq in in_window else console.paint(".", "dim")
        console.message(item.message, prefix=f"{item.seq:>4} {mark} ")


def show_state(stored: StoredThread, console: Console) -> None:
    """Print the run status and the state fields that are set."""
    meta = stored.values.get("execution_meta") or {}
    status = f"status {meta.get('status', '?')}, last node {meta.get('current_node', '?')}"
    if meta.get("error"):
        status += f", error: {meta['error']}"
    console.line(status)
    custom = {
        k: v for k, v in stored.values.items() if k not in _RUNTIME_VALUES and v not in _EMPTY
    }
    if custom:
        console.line(
            "state: "
            + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in custom.items())
        )
    console.line(f"window: log seqs {_ranges(stored.window)}")


def show_summary(stored: StoredThread, console: Console) -> None:
    """Print the context summary, or say there is none."""
    summary = stored.values.get("context_summary")
    if summary:
        console.line("summary:", "bold")
        for line in str(summary).splitlines():
            console.line(f"  {line}")
    else:
        console.note("summary: (none)")


async def export_thread(checkpointer: Checkpointer, key: ThreadKey) -> dict[str, Any]:
    """The thread as JSON-ready data: the whole log with seqs, the window and the state."""
    stored = await load_thread(checkpointer, key)
    log = await checkpointer.alist_messages(key)
    return {
        "thread_id": key.thread_id,
        "user_id": key.user_id,
        "version": stored.version,
        "metadata": stored.metadata,
        "values": stored.values,
        "window": [list(pair) for pair in stored.window],
        "seqs": [item.seq for item in log],
        "messages": MessagesAdapter.dump_python([item.message for item in log], mode="json"),
    }


async def confirm_delete(
    checkpointer: Checkpointer,
    key: ThreadKey,
    console: Console,
    *,
    assume_yes: bool = False,
    read: Reader = read_line,
) -> bool:
    """Whether to delete the thread: asked on a terminal, after showing what would go.

    A missing thread is a ``CliError``. Without a terminal to ask on,
    deleting needs ``assume_yes`` (``--yes``); otherwise it is refused.
    """
    stored = await load_thread(checkpointer, key)
    if assume_yes:
        return True
    if not stdin_is_terminal():
        raise CliError(
            f"not deleting thread {key.thread_id!r} without confirmation "
            "(stdin is not a terminal): pass --yes"
        )
    console.line(
        f"thread {key.thread_id} (user {key.user_id}): {stored.log_length} messages in the log, "
        f"version {stored.version}"
    )
    try:
        answer = await read(f"delete thread {key.thread_id} and its history? [y/N] ")
    except EOFError:
        console.line()
        return False
    return answer.strip().lower() in ("y", "yes")


async def delete_thread(checkpointer: Checkpointer, key: ThreadKey) -> None:
    """Delete the thread; a missing thread is a ``CliError``."""
    if not await checkpointer.adelete_thread(key):
        raise CliError(f"no thread {key.thread_id!r} for user {key.user_id!r}")


def _ranges(window: list[tuple[int, int]]) -> str:
    if not window:
        return "(empty)"
    return ", ".join(
        f"{start}-{end - 1}" if end - start > 1 else str(start) for start, end in window
    )
