"""Code run in child processes by the multi-process tests (spawned, so it must be importable)."""

from __future__ import annotations

import asyncio
from typing import Any

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import ConflictError
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer, ThreadWrite

RACE_KEY = ThreadKey("raced", "alice")


def open_checkpointer(spec: dict[str, Any]) -> Checkpointer:
    if spec["kind"] == "sqlite":
        return SqliteCheckpointer(spec["path"])
    from tenxgraph.storage.checkpointer import PgCheckpointer

    return PgCheckpointer(spec["dsn"], schema=spec["schema"])


def race(spec: dict[str, Any], name: str, rounds: int, barrier: Any, results: Any) -> None:
    """Each round: load, wait for the rival to load too, then both try to save."""
    asyncio.run(_race(spec, name, rounds, barrier, results))


async def _race(spec: dict[str, Any], name: str, rounds: int, barrier: Any, results: Any) -> None:
    checkpointer = open_checkpointer(spec)
    try:
        for round_ in range(rounds):
            stored = await checkpointer.aload(RACE_KEY)
            assert stored is not None
            barrier.wait()
            write = ThreadWrite(
                expected_version=stored.version,
                new_messages=[Message.text_message(f"{name} {round_}")],
                values={"by": name},
                window=[(0, stored.log_length + 1)],
                node=name,
                step=round_,
                expected_incarnation=stored.incarnation,
            )
            try:
                version = (await checkpointer.asave(RACE_KEY, write)).version
                results.put((round_, name, "won", version))
            except ConflictError as conflict:
                results.put((round_, name, "conflict", conflict.actual))
            barrier.wait()
    finally:
        await checkpointer.aclose()


def start_together(spec: dict[str, Any], name: str, barrier: Any, results: Any) -> None:
    """Open a fresh store at the same moment as the others (so both migrate) and save."""
    asyncio.run(_start_together(spec, name, barrier, results))


async def _start_together(spec: dict[str, Any], name: str, barrier: Any, results: Any) -> None:
    checkpointer = open_checkpointer(spec)
    barrier.wait()
    try:
        write = ThreadWrite(0, [Message.text_message(name)], {}, [(0, 1)], node=name, step=0)
        results.put((name, (await checkpointer.asave(ThreadKey(name, "alice"), write)).version))
    except Exception as error:
        results.put((name, repr(error)))
    finally:
        await checkpointer.aclose()


CRASH_KEY = ThreadKey("crashed", "alice")


def write_forever(spec: dict[str, Any]) -> None:
    """Save two messages per step until killed."""
    asyncio.run(_write_forever(spec))


async def _write_forever(spec: dict[str, Any]) -> None:
    checkpointer = open_checkpointer(spec)
    incarnation, version = None, 0
    while True:
        messages = [Message.text_message(f"q{version}"), Message.text_message(f"a{version}")]
        write = ThreadWrite(
            version, messages, {"step": version}, [(0, 2 * version + 2)], node="w", step=version
        )
        write.expected_incarnation = incarnation
        incarnation, version = await checkpointer.asave(CRASH_KEY, write)
