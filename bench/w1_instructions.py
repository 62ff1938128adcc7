"""W1 (and W3 at 1,000 messages) in instructions per call, counted by callgrind.

Wall-clock times on a shared machine are noise; instruction counts are not. Each case
runs twice under ``valgrind --tool=callgrind``, each time in a fresh process with
``PYTHONHASHSEED=0``: 50 warm-up calls, ``gc.freeze()``, then 100 calls in one process
and 1,100 in the other. The difference over 1,000 is the cost of one call, without the
interpreter's start, the imports and the warm-up.

Run: ``python -m bench.w1_instructions [case ...]`` (cases: ``floor``, ``floor_asyncio``
(the same work as plain asyncio, run from sync code), ``invoke``, ``checkpointer``,
``add_messages``; all by default). Needs ``valgrind``. With ``--child CASE N`` it is the
measured process itself.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable

CASES = ("floor", "floor_asyncio", "invoke", "checkpointer", "add_messages")
WARM_UP, FEW, MANY = 50, 100, 1_100


def _workload(case: str) -> Callable[[], object]:
    from bench import floors, w1_invoke, w3_add_messages
    from tenxgraph.core.state import Message
    from tenxgraph.core.state.reducers import add_messages
    from tenxgraph.storage.checkpointer import InMemoryCheckpointer

    if case == "floor":
        question = Message.text_message("hi")
        return lambda: floors.three_calls(question)
    if case == "floor_asyncio":
        question = Message.text_message("hi")
        loop = asyncio.new_event_loop()
        return lambda: loop.run_until_complete(floors.three_awaits(question))
    if case == "add_messages":
        left = w3_add_messages.history(w3_add_messages.SHORT)
        new = Message.text_message("new", role="assistant")
        return lambda: add_messages(left, [new])
    question_input = {"messages": [Message.text_message("hi")]}
    if case == "invoke":
        plain = w1_invoke.three_nodes()
        return lambda: plain.invoke(question_input)
    durable = w1_invoke.three_nodes(InMemoryCheckpointer())
    threads = itertools.count()
    return lambda: durable.invoke(question_input, {"thread_id": f"w1-{next(threads)}"})


def _child(case: str, calls: int) -> None:
    call = _workload(case)
    for _ in range(WARM_UP):
        call()
    gc.collect()
    gc.freeze()
    for _ in range(calls):
        call()


def _instructions(case: str, calls: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        command += [sys.executable, "-m", "bench.w1_instructions", "--child", case, str(calls)]
        subprocess.run(command, env=env, check=True, capture_output=True)
        with open(out) as file:
            summary = re.search(r"^summary:\s+(\d+)", file.read(), re.MULTILINE)
        assert summary is not None, "callgrind wrote no summary"
        return int(summary.group(1))


def per_call(case: str) -> float:
    """Instructions per call of ``case`` (see the module's docstring)."""
    return (_instructions(case, MANY) - _instructions(case, FEW)) / (MANY - FEW)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        _child(argv[1], int(argv[2]))
        return
    for case in argv or CASES:
        print(f"{case}: {per_call(case) / 1000:.1f}k instructions per call", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
