"""A run's start on a warm thread: the lease taken by the save of its input.

A run takes its thread's lease before it reads the thread, and saves its
input before its first node runs: two transactions before any node. A thread
this graph keeps warm (its last run here ended and kept the session) needs no
read, so on a backend whose saves take leases (``saves_take_leases``) the
lease is deferred (``ThreadLease.deferred``) and the input's save takes it, in the
transaction that also compares the stamp of the warm copy with the stored
one: a turn commits twice, not three times.

Nothing the user wrote runs before that save: the lease is deferred only
without run hooks or tracing (each would see the run hold its thread later,
in another order), and the input is saved here only when the run enters at a
known node (a conditional entry calls its router first). When the save finds
the thread held or changed it wrote nothing; then, as when the input is not
saved here, the run takes the lease the usual way, its ``multitask_strategy``
deciding what happens if it is held, and starts again from the stored thread
unless the warm copy is still current.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from tenxgraph.core.graph._tracing import tracer
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.ids import ThreadKey, checkpoint_of
from tenxgraph.errors import ConflictError
from tenxgraph.runs import LeasePolicy, ThreadLease
from tenxgraph.utils.constants import START

if TYPE_CHECKING:
    from tenxgraph.core.graph._compiled import CompiledGraph
    from tenxgraph.core.graph._steps import Run

__all__ = ["start_held", "warm_lease"]

S = TypeVar("S", bound=AgentState)


def warm_lease(
    graph: CompiledGraph[Any],
    key: ThreadKey,
    run_id: str,
    policy: LeasePolicy,
    config: Mapping[str, Any],
) -> ThreadLease | None:
    """A deferred lease for a run on ``key`` when it may wait for the input's save, else None."""
    checkpointer = graph.checkpointer  # a ThreadLeases (compile checks): no ABC check per run
    # no mutate: only speed hangs on these two lines; a deferred lease a backend cannot take
    # fails its first save, and the run then takes the lease as usual
    takes = getattr(checkpointer, "saves_take_leases", False)  # pragma: no mutate
    if checkpointer is None or not takes:  # pragma: no mutate
        return None
    if graph.hooks.hooks or checkpoint_of(config) is not None or tracer() is not None:
        return None
    stamp = graph.warm.stamp(key)
    return None if stamp is None else ThreadLease.deferred(checkpointer, key, run_id, policy, stamp)


async def start_held(
    graph: CompiledGraph[S], lease: ThreadLease | None, start: Callable[[], Awaitable[Run[S]]]
) -> Run[S]:
    """``start()``, the run's ``graph._start``, with a deferred lease taken by the input's save.

    Failing that, the lease is taken on its own and ``start`` called again.
    """
    if lease is None or lease.pending is None:
        return await start()
    run: Run[S] | None
    try:  # the input is values and lists (``as_messages``), so a second start reads the same
        run = await start()
    except Exception:  # raised again, if it still holds, once the lease is held
        run = None
    if run is not None and run.new_input and run.next_node != START:
        run.state.execution_meta.set_next_node(run.next_node)
        try:
            await graph._save(run, [], START)  # pragma: no mutate (None adds none, as [])
        except ConflictError:  # held by another run, or changed: nothing was written
            run = None
        else:
            run.new_input = False  # pragma: no mutate (None is as false)
            return run
    await lease.take_pending()
    if run is not None and run.session is not None and run.session.stamp == lease.stamp:
        return run  # the warm copy is current: its input is saved at the entry, as usual
    return await start()
