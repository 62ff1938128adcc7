"""How a run goes on once a worker claimed it: the spec to run, or the outcome it already reached.

A claimed row is a queued run nobody started, or a run whose worker died or
handed it back. If the thread moved past the version its first attempt
began from (``base_version``), its input was saved: the run continues the
thread (input None; the tool ledger keeps finished tools from running
again), and a turn that had ended (done, paused for a human, failed,
stopped) is only recorded. Otherwise its input is run again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.runs import RunSpec
from tenxgraph.server._tracing import TRACE_KEY

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.runs import ClaimedRun
    from tenxgraph.server._run_stream import StreamEncoder

__all__ = ["resumed"]

_ENDED = {
    "completed": "success",
    "interrupted": "interrupted",
    "error": "error",
    "stopped": "interrupted",
}
"""A saved turn that ended -> the run's status."""


async def resumed(
    graph: CompiledGraph[Any], encoder: StreamEncoder, claim: ClaimedRun
) -> RunSpec | tuple[str, Any]:
    """What to run for ``claim``, or ``(status, values)`` when its turn ended before."""
    from tenxgraph.server._run_request import RunRequest, graph_input, name_graph, run_config_of

    request = claim.request
    kwargs = {k: v for k, v in request["kwargs"].items() if k != TRACE_KEY}  # the writer's
    body = RunRequest.model_validate(
        {**kwargs, "assistant_id": claim.record.get("assistant_id", "")}
    )
    config = run_config_of(body, claim.thread_id, claim.user_id)
    config.update(run_id=claim.run_id, multitask_strategy="enqueue")
    if not request.get("delete_thread"):  # as the worker the run was asked of does
        name_graph(config, str(claim.record.get("assistant_id", "")))
    run_input = graph_input(body)
    if claim.base_version is not None and await _input_saved(graph, claim):
        state = await graph.aget_state({"thread_id": claim.thread_id, "user_id": claim.user_id})
        ended = None if state is None else _ENDED.get(state.execution_meta.status)
        if state is not None and ended is not None:
            return ended, encoder.values(state)
        run_input = None
        config.pop("checkpoint_id", None)  # its first save branched the thread already
    return RunSpec(
        graph=graph,
        input=run_input,
        config=config,
        stream_modes=body.modes(),
        stream_subgraphs=bool(body.stream_subgraphs),
        encoder=encoder,
        invocation_state=dict(body.context) if body.context else None,
        on_completion=_deleter(graph, claim) if request.get("delete_thread") else None,
    )


async def _input_saved(graph: CompiledGraph[Any], claim: ClaimedRun) -> bool:
    assert graph.checkpointer is not None  # create_app refuses a graph without one
    stamp = await graph.checkpointer.aversion(claim.key)
    return stamp is not None and stamp.version > (claim.base_version or 0)


def _deleter(graph: CompiledGraph[Any], claim: ClaimedRun) -> Any:
    async def delete() -> None:
        assert graph.checkpointer is not None
        await graph.checkpointer.adelete_thread(ThreadKey(claim.thread_id, claim.user_id))

    return delete
