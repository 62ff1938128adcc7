"""W11: a parallel step of 100 no-op async tasks, against an ``asyncio.gather`` of 100 no-ops.

Three graphs, each run by ``ainvoke`` inside one event loop (so ``asyncio.run`` is
timed by neither side), no checkpointer unless said:

- ``fanout``: START -> 100 plain edges -> 100 nodes that return None: one step of 100 tasks;
- ``send``: START -> ``plan`` whose router returns 100 ``Send("noop", n)``: two steps;
- ``fanout_memory``: ``fanout`` on ``InMemoryCheckpointer`` (each task's write saved);
- ``single``: START -> one no-op node, the fixed cost of an ``ainvoke`` to subtract.

``per_task_us`` is (fanout - single) / 100; the floor is ``gather_us / 100``, an
``asyncio.gather`` of 100 coroutines that return None. Target: per-task overhead
within 3x the floor's. Run: ``python -m bench.w11_fanout``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tenxgraph.core.graph import CompiledGraph, Send, StateGraph
from tenxgraph.core.state import AgentState
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer
from tenxgraph.utils import END, START

TASKS = 100


async def noop(state: Any) -> None:
    return None


def fanout(checkpointer: Checkpointer | None = None) -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    for n in range(TASKS):
        graph.add_node(f"n{n:03d}", noop)
        graph.add_edge(START, f"n{n:03d}")
        graph.add_edge(f"n{n:03d}", END)
    return graph.compile(checkpointer)


def send() -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    graph.add_node("plan", noop)
    graph.add_node("noop", noop)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda state: [Send("noop", n) for n in range(TASKS)])
    return graph.compile()


def single() -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState)
    graph.add_node("one", noop)
    graph.add_edge(START, "one")
    return graph.compile()


async def _interleaved_us(
    actions: dict[str, Any], *, number: int, repeat: int = 9
) -> dict[str, float]:
    """Microseconds per call of each coroutine function: the best of ``repeat`` rounds.

    The rounds of all of them alternate, so a burst of other load on the shared
    machine reaches each alike and the ratios hold even when the figures move.
    """
    best = dict.fromkeys(actions, float("inf"))
    for _ in range(repeat):
        for name, action in actions.items():
            start = time.perf_counter_ns()
            for _ in range(number):
                await action()
            best[name] = min(best[name], (time.perf_counter_ns() - start) / number / 1e3)
    return {name: round(us, 2) for name, us in best.items()}


async def _measure() -> dict[str, Any]:
    wide, mapped, one = fanout(), send(), single()
    memory = fanout(InMemoryCheckpointer())
    threads = iter(range(10**9))

    async def gather() -> None:
        await asyncio.gather(*(noop(None) for _ in range(TASKS)))

    async def saved() -> None:
        await memory.ainvoke({}, {"thread_id": f"t{next(threads)}"})

    async def invoke(app: CompiledGraph[AgentState]) -> None:
        await app.ainvoke({})

    result: dict[str, Any] = await _interleaved_us(
        {
            "gather_us": gather,
            "fanout_us": lambda: invoke(wide),
            "send_us": lambda: invoke(mapped),
            "fanout_memory_us": saved,
        },
        number=20,
    )
    result.update(await _interleaved_us({"single_us": lambda: invoke(one)}, number=500))
    per_task = (result["fanout_us"] - result["single_us"]) / TASKS
    floor = result["gather_us"] / TASKS
    result["per_task_us"] = round(per_task, 2)
    result["floor_per_task_us"] = round(floor, 2)
    result["per_task_over_floor"] = round(per_task / floor, 1)
    return result


def run() -> dict[str, Any]:
    return asyncio.run(_measure())


if __name__ == "__main__":
    print(run())
