"""Graph runs in child processes: many writers on one thread, and runs killed with SIGKILL.

Used by ``test_busy_processes.py``, ``test_kill_runs.py`` and
``scripts/integrity_figures.py``. Children are started with ``spawn`` or
``forkserver``, so everything they run is importable from here. A backend is
described by a plain ``spec`` dict (picklable): ``{"kind": "sqlite", "path": ...}``,
``{"kind": "postgres", "dsn": ..., "schema": ...}`` or the same with
``"kind": "postgres+redis"`` and ``"redis_url"``, ``"prefix"``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenxgraph.core.graph import StateGraph, ToolNode
from tenxgraph.core.graph._compiled import CompiledGraph
from tenxgraph.core.state import AgentState, Message, ThreadKey, ToolCallBlock, is_paired
from tenxgraph.core.state.message_block import ToolResultBlock
from tenxgraph.errors import ThreadBusyError
from tenxgraph.storage.checkpointer import (
    Checkpoint,
    Checkpointer,
    SqliteCheckpointer,
    ThreadStamp,
    ThreadWrite,
)
from tenxgraph.utils.constants import END, START

BUSY_THREAD = "busy"
KILL_THREAD = "killed"


def open_checkpointer(spec: dict[str, Any]) -> Checkpointer:
    """The checkpointer ``spec`` describes (each process opens its own)."""
    if spec["kind"] == "sqlite":
        return SqliteCheckpointer(spec["path"])
    from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache

    redis = None
    if spec["kind"] == "postgres+redis":
        redis = RedisThreadCache(spec["redis_url"], prefix=spec["prefix"])
    return PgCheckpointer(spec["dsn"], schema=spec["schema"], redis=redis)


def last_user_text(state: AgentState) -> str:
    """The text of the turn's user message (the last one in the context)."""
    return next(m.text() for m in reversed(state.context) if m.role == "user")


# --- many writers on one thread ------------------------------------------------------------


def busy_graph(
    checkpointer: Checkpointer, strategy: str, lease_seconds: float, busy_timeout: float
) -> CompiledGraph[Any]:
    """user ``X`` -> think (a call ``call-X``) -> tools (``echo X``) -> reply (``reply to X``).

    Each turn saves five times (input, think, the tool's start and result,
    tools, reply), and each step sleeps 20-50 ms, so turns overlap.
    """

    async def think(state: AgentState) -> Message:
        await asyncio.sleep(random.uniform(0.02, 0.05))
        text = last_user_text(state)
        call = ToolCallBlock(id=f"call-{text}", name="echo", args={"text": text})
        return Message(role="assistant", content=[call])

    async def echo(text: str) -> str:
        """Echo the text."""
        await asyncio.sleep(random.uniform(0.02, 0.05))
        return f"echo {text}"

    async def reply(state: AgentState) -> Message:
        await asyncio.sleep(random.uniform(0.02, 0.05))
        return Message.text_message(f"reply to {last_user_text(state)}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("think", think)
    graph.add_node("tools", ToolNode([echo]))
    graph.add_node("reply", reply)
    graph.set_entry_point("think")
    graph.add_edge("think", "tools")
    graph.add_edge("tools", "reply")
    return graph.compile(
        checkpointer,
        lease_seconds=lease_seconds,
        multitask_strategy=strategy,  # type: ignore[arg-type]
        busy_timeout=busy_timeout,
    )


def append_turns(
    spec: dict[str, Any],
    name: str,
    turns: int,
    strategy: str,
    lease_seconds: float,
    barrier: Any,
    results: Any,
) -> None:
    """Send ``turns`` messages ``<name>-<i>`` to the one thread; report each turn's outcome.

    Each report is ``(text, outcome, detail)``: ``("acked", status)`` when the
    run returned, ``("busy", message)`` for ``ThreadBusyError``, ``("error", repr)``
    for anything else.
    """
    barrier.wait()
    asyncio.run(_append_turns(spec, name, turns, strategy, lease_seconds, results))


async def _append_turns(
    spec: dict[str, Any], name: str, turns: int, strategy: str, lease: float, results: Any
) -> None:
    checkpointer = open_checkpointer(spec)
    app = busy_graph(checkpointer, strategy, lease, busy_timeout=120.0)
    config = {"thread_id": BUSY_THREAD}
    try:
        for turn in range(turns):
            await asyncio.sleep(random.uniform(0.0, 0.1))  # a user typing, not a tight loop
            text = f"{name}-{turn}"
            message = Message.text_message(text, message_id=f"id-{text}")
            try:
                result = await app.ainvoke({"messages": [message]}, config)
                results.put((text, "acked", result["state"].execution_meta.status))
            except ThreadBusyError as busy:
                results.put((text, "busy", str(busy)))
            except BaseException as error:  # CancelledError too: report it, go on
                results.put((text, "error", repr(error)))
    finally:
        await checkpointer.aclose()


# --- a run killed right after its input is saved --------------------------------------------


def reply_graph(checkpointer: Checkpointer, *, failing: bool = False) -> CompiledGraph[Any]:
    """user ``X`` -> reply (``reply to X``, or a raised error with ``failing``)."""

    async def reply(state: AgentState) -> Message:
        if failing:
            raise RuntimeError("the provider is down")
        return Message.text_message(f"reply to {last_user_text(state)}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph.compile(checkpointer, lease_seconds=0.3, multitask_strategy="enqueue")


def die_after_input(spec: dict[str, Any], text: str) -> None:
    """Send ``text`` to ``KILL_THREAD``; SIGKILL this process once the input is saved."""
    checkpointer = open_checkpointer(spec)
    save = checkpointer.asave

    async def save_then_die(key: ThreadKey, write: ThreadWrite) -> ThreadStamp:
        stamp = await save(key, write)
        if write.node == START:
            os.kill(os.getpid(), signal.SIGKILL)
        return stamp

    checkpointer.asave = save_then_die  # type: ignore[method-assign]
    app = reply_graph(checkpointer)
    asyncio.run(app.ainvoke({"messages": [Message.text_message(text)]}, {"thread_id": KILL_THREAD}))


# --- runs killed at random moments ---------------------------------------------------------

PHASES = ("starting", "between", "model", "tool")
"""What a killed child was doing: the shared ``phase`` value it sets indexes this
(``between``: saves, the lease, the moves between steps and turns)."""


def _append_line(path: Path, line: str) -> None:
    """Append one line durably: one write, then fsync, so a kill leaves it whole or absent."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def kill_graph(
    checkpointer: Checkpointer, work: Path, lease_seconds: float, ready: Any, phase: Any
) -> CompiledGraph[Any]:
    """model -> tools -> model -> END: user ``uN`` with N even gets 1-2 ``record`` calls.

    ``record`` appends ``start <id>`` and ``done <id>`` to ``work/tools.log``
    (fsync'd), so the parent counts executions and re-runs of finished calls.
    ``ready`` (an event) is set when a step first runs, and ``phase`` (a
    shared int) says which step runs, for the kill statistics.
    """

    async def model(state: AgentState) -> Message:
        phase.value = 2
        ready.set()
        await asyncio.sleep(random.uniform(0.0, 0.03))
        phase.value = 1
        last = state.context[-1]
        uid = last_user_text(state)
        if last.role == "user" and int(uid[1:]) % 2 == 0:
            calls = [
                ToolCallBlock(id=f"{uid}-c{k}", name="record", args={})
                for k in range(random.randint(1, 2))
            ]
            return Message(role="assistant", content=calls)
        return Message.text_message(f"answer to {uid}", role="assistant")

    def record(tool_call_id: str) -> str:
        """Log the call's start and end durably."""
        phase.value = 3
        ready.set()
        _append_line(work / "tools.log", f"start {tool_call_id}")
        time.sleep(random.uniform(0.0, 0.02))
        _append_line(work / "tools.log", f"done {tool_call_id}")
        phase.value = 1
        return f"recorded {tool_call_id}"

    graph = StateGraph(AgentState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([record]))
    graph.set_entry_point("model")

    def after_model(state: AgentState) -> str:
        return "tools" if state.context[-1].tool_calls() else END

    graph.add_conditional_edges("model", after_model)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer, lease_seconds=lease_seconds, multitask_strategy="enqueue")


def kill_child(
    spec: dict[str, Any], work: str, lease_seconds: float, final: bool, ready: Any, phase: Any
) -> None:
    """Run turns on the thread until killed (or, with ``final``, until one turn is acknowledged).

    A dead run (status ``running``) is continued with ``invoke(None)``, a
    failed turn rolled back; otherwise the next message ``uN`` is sent, N
    counted from ``sent.log``. Exceptions go to ``errors.log``: a
    ``ThreadBusyError`` (a lease lost under load) is noted and the loop goes
    on, anything else ends the child with status 1.
    """
    try:
        asyncio.run(_kill_child(spec, Path(work), lease_seconds, final, ready, phase))
    except BaseException:
        _append_line(Path(work) / "errors.log", traceback.format_exc().replace("\n", " | "))
        raise


async def _kill_child(
    spec: dict[str, Any], work: Path, lease: float, final: bool, ready: Any, phase: Any
) -> None:
    checkpointer = open_checkpointer(spec)
    app = kill_graph(checkpointer, work, lease, ready, phase)
    config = {"thread_id": KILL_THREAD, "busy_timeout": 120.0}
    try:
        while True:
            state = await app.aget_state(config)
            status = None if state is None else state.execution_meta.status
            try:
                if status == "running":
                    await app.ainvoke(None, config)
                    _append_line(work / "continued.log", "continued a dead run")
                    continue
                if status == "error":
                    await app.arollback(config)
                    _append_line(work / "rolled_back.log", "rolled a failed turn back")
                    continue
                uid = f"u{len(_lines(work / 'sent.log'))}"
                _append_line(work / "sent.log", uid)
                await app.ainvoke({"messages": [Message.text_message(uid, message_id=uid)]}, config)
                _append_line(work / "acked.log", uid)
            except ThreadBusyError as busy:
                _append_line(work / "busy.log", str(busy).replace("\n", " "))
                continue
            if final:
                return
    finally:
        await checkpointer.aclose()


@dataclass
class KillFigures:
    """What one kill harness run measured."""

    backend: str
    kills: int
    phases: Counter[str] = field(default_factory=Counter)
    """Where the kills landed: ``PHASES`` names -> count."""
    sent: int = 0
    acked: int = 0
    turns: int = 0
    """User messages in the stored log."""
    lost: list[str] = field(default_factory=list)
    """Acknowledged user messages missing from the log (must be empty)."""
    duplicate_ids: int = 0
    duplicate_inputs: int = 0
    paired: bool = False
    bad_results: list[str] = field(default_factory=list)
    """Tool calls without exactly one result, results without a call (must be empty)."""
    calls: int = 0
    executions: int = 0
    reruns: int = 0
    """Calls started more than once (each extra start needs a kill)."""
    finished_reruns: int = 0
    """Calls started again after a start had finished (``done`` logged): the re-run window."""
    rerun_after_saved: list[str] = field(default_factory=list)
    """Calls started again after a checkpoint held their result (must be empty)."""
    given_up: int = 0
    """Calls answered 'not started again' after ``max_starts`` dead starts."""
    interrupted: int = 0
    """Calls answered as interrupted (their run died, the thread moved on)."""
    continued: int = 0
    """Dead runs continued with ``invoke(None)``."""
    rolled_back: int = 0
    """Failed turns rolled back (none expected: nothing in the graph fails)."""
    busy: int = 0
    """``ThreadBusyError`` seen by the children (a lease lost under load)."""
    seconds: float = 0.0

    def summary(self) -> str:
        """One line of the figures."""
        return (
            f"{self.backend}: kills={self.kills} ({dict(self.phases)}) turns={self.turns} "
            f"sent={self.sent} acked={self.acked} lost={len(self.lost)} "
            f"duplicate_ids={self.duplicate_ids} duplicate_inputs={self.duplicate_inputs} "
            f"paired={self.paired} bad_results={len(self.bad_results)} calls={self.calls} "
            f"executions={self.executions} reruns={self.reruns} "
            f"finished_reruns={self.finished_reruns} "
            f"rerun_after_saved={len(self.rerun_after_saved)} given_up={self.given_up} "
            f"interrupted={self.interrupted} continued={self.continued} "
            f"rolled_back={self.rolled_back} busy={self.busy} "
            f"in {self.seconds:.0f} s"
        )


def forkserver() -> Any:
    """A ``forkserver`` context whose server has imported this module: children start in ms."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def kill_runs(
    spec: dict[str, Any], work: Path, kills: int, *, lease_seconds: float = 0.5, seed: int = 0
) -> KillFigures:
    """Start a child, let it run 20-300 ms of steps, SIGKILL it; ``kills`` times, then finish.

    The wait starts when the child's first step runs (a restarted child
    first waits for the dead one's lease), so kills land in model and tool
    steps, saves, and the moves between turns.
    """
    context = forkserver()
    rng = random.Random(seed)
    figures = KillFigures(spec["kind"], kills)
    started = time.monotonic()
    for _ in range(kills):
        ready, phase = context.Event(), context.Value("i", 0)
        child = context.Process(
            target=kill_child, args=(spec, str(work), lease_seconds, False, ready, phase)
        )
        child.start()
        if not ready.wait(60):
            child.kill()
            raise RuntimeError(f"child not ready in 60 s; errors: {_lines(work / 'errors.log')}")
        time.sleep(rng.uniform(0.02, 0.3))
        figures.phases[PHASES[phase.value]] += 1
        child.kill()
        child.join(30)
        if child.exitcode != -signal.SIGKILL:
            raise RuntimeError(
                f"child ended with {child.exitcode} before the kill; "
                f"errors: {_lines(work / 'errors.log')}"
            )
    ready, phase = context.Event(), context.Value("i", 0)
    final = context.Process(
        target=kill_child, args=(spec, str(work), lease_seconds, True, ready, phase)
    )
    final.start()
    final.join(120)
    if final.exitcode != 0:
        final.kill()
        raise RuntimeError(
            f"final child ended with {final.exitcode}: {_lines(work / 'errors.log')}"
        )
    asyncio.run(_check_log(spec, work, figures))
    figures.seconds = time.monotonic() - started
    return figures


async def _check_log(spec: dict[str, Any], work: Path, figures: KillFigures) -> None:
    """Fill ``figures`` from the stored log and the children's side files."""
    checkpointer = open_checkpointer(spec)
    try:
        stored = await checkpointer.alist_messages(ThreadKey(KILL_THREAD))
        checkpoints = await checkpointer.alist_checkpoints(ThreadKey(KILL_THREAD))
    finally:
        await checkpointer.aclose()
    log = [message.message for message in stored]
    figures.rerun_after_saved = _rerun_after_saved(checkpoints)
    ids = [message.message_id for message in log]
    inputs = [message.text() for message in log if message.role == "user"]
    acked = _lines(work / "acked.log")
    figures.sent = len(_lines(work / "sent.log"))
    figures.acked, figures.turns = len(acked), len(inputs)
    figures.lost = sorted(set(acked) - set(inputs))
    figures.duplicate_ids = len(ids) - len(set(ids))
    figures.duplicate_inputs = len(inputs) - len(set(inputs))
    figures.paired = is_paired(log)
    figures.continued = len(_lines(work / "continued.log"))
    figures.rolled_back = len(_lines(work / "rolled_back.log"))
    figures.busy = len(_lines(work / "busy.log"))
    _check_results(log, figures)
    _count_executions(_lines(work / "tools.log"), figures)


def _check_results(log: list[Message], figures: KillFigures) -> None:
    calls = [call.id for message in log for call in message.tool_calls()]
    results = [
        block
        for message in log
        if message.role == "tool"
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]
    answered = Counter(block.call_id for block in results)
    figures.calls = len(calls)
    figures.bad_results = [
        f"{call}: {answered[call]} results" for call in calls if answered[call] != 1
    ]
    figures.bad_results += [f"{call}: result without a call" for call in set(answered) - set(calls)]
    figures.given_up = sum("not started again" in str(block.output) for block in results)
    figures.interrupted = sum("was interrupted" in str(block.output) for block in results)


def _rerun_after_saved(checkpoints: Sequence[Checkpoint]) -> list[str]:
    """Calls whose second start was saved after a checkpoint already held their result."""
    saved: dict[str, int] = {}
    restarted: dict[str, int] = {}
    for checkpoint in sorted(checkpoints, key=lambda c: c.version):
        meta = checkpoint.values.get("execution_meta") or {}
        for call in meta.get("tool_ledger") or {}:
            saved.setdefault(call, checkpoint.version)
        for call, starts in (meta.get("tool_starts") or {}).items():
            if starts >= 2:
                restarted.setdefault(call, checkpoint.version)
    return sorted(call for call, version in restarted.items() if saved.get(call, version) < version)


def _count_executions(lines: list[str], figures: KillFigures) -> None:
    starts: Counter[str] = Counter()
    finished: set[str] = set()
    rerun_after_done: set[str] = set()
    for line in lines:
        event, call = line.split(" ", 1)
        if event == "start":
            if call in finished:
                rerun_after_done.add(call)
            starts[call] += 1
        else:
            finished.add(call)
    figures.executions = sum(starts.values())
    figures.reruns = sum(1 for count in starts.values() if count > 1)
    figures.finished_reruns = len(rerun_after_done)
