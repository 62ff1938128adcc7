"""A run's handle held by its caller: ``astream(..., control=RunControl(...))``.

The caller stops the run through the handle at any point, even before the
run took its thread; stopped then, the run ends without an event and
leaves the thread as it was (a caller such as the server's run manager
needs no polling until the graph tracks the run). The handle also hears of
each save (``on_save``), with the checkpoint as the history has it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tenxgraph.core.graph import RunControl, StateSnapshot
from tenxgraph.storage.checkpointer import Checkpointer
from tests.core.graph.test_one_run_per_thread import CONFIG, gated_app, log, said
from tests.core.graph.test_parallel import diamond


async def _events(app: Any, text: str, control: RunControl, **config: Any) -> list[Any]:
    return [event async for event in app.astream(said(text), {**CONFIG, **config}, control=control)]


async def test_a_run_stopped_while_it_waits_for_the_thread_ends_writing_nothing(
    checkpointer: Checkpointer,
) -> None:
    app, node = gated_app(checkpointer, busy_timeout=10)
    first = asyncio.create_task(app.ainvoke(said("A"), CONFIG))
    await node.started.wait()
    control = RunControl("second", None)
    second = asyncio.create_task(_events(app, "B", control, multitask_strategy="enqueue"))
    await asyncio.sleep(0.2)  # it waits for the lease the first run holds
    control.stop()
    node.gate.set()
    await first
    assert await asyncio.wait_for(second, 10) == []
    assert await log(checkpointer) == ["A", "reply to A"]
    await asyncio.wait_for(app.ainvoke(said("C"), CONFIG), 5)  # the thread is free at once
    assert (await log(checkpointer))[-2:] == ["C", "reply to C"]


async def test_a_handle_stopped_before_the_run_began_leaves_the_thread_alone(
    checkpointer: Checkpointer,
) -> None:
    app, node = gated_app(checkpointer)
    node.gate.set()
    control = RunControl("early", None)
    control.stop()
    assert await _events(app, "A", control) == []
    assert await log(checkpointer) == []
    assert control.run_id == "early" and control.thread is not None


async def test_the_handle_hears_of_each_save_as_the_history_has_it(
    checkpointer: Checkpointer,
) -> None:
    """``on_save``: every checkpoint the run writes (a parallel step's too), as history reads it."""
    app = diamond(join=True).compile(checkpointer)
    config = {"thread_id": "watched", "user_id": "u"}
    seen: list[tuple[Any, ...]] = []

    def saved(snapshot: StateSnapshot[Any]) -> None:
        state = snapshot.state.model_dump(mode="json")
        seen.append(
            (snapshot.version, snapshot.node, snapshot.step, snapshot.parent_version, state)
        )

    async def run(input: Any, **more: Any) -> None:
        control = RunControl("watched", None)
        control.on_save = saved
        async for _ in app.astream(input, {**config, **more}, control=control):
            pass

    await run({"state": {"notes": ["start"]}})
    fork = (await app.aget_state_history(config))[-2].version
    await run(None, checkpoint_id=str(fork))  # a branch: its first save's parent is ``fork``
    history = reversed(await app.aget_state_history(config))
    expected = [
        (s.version, s.node, s.step, s.parent_version, s.state.model_dump(mode="json"))
        for s in history
    ]
    assert seen == expected
    assert seen[-1][4]["notes"][-1] == "d" and fork in [entry[3] for entry in seen]
