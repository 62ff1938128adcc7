"""What the server makes its runs of: the ``RunParts`` the run registry (``tenxgraph.runs``) uses.

The registry sits below the runtime and the server, so the server hands it
the pieces that are theirs: the log of a run's stream events
(``EventLog``), the runtime's handle (``RunControl``), the browser-side
calls a run waits for (``RemoteCalls``), and the writer that runs the graph
into the log in the server's wire format (``RunStreamWriter``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from tenxgraph.core.graph import RunControl
from tenxgraph.runs import RunParts, RunRecord, RunRegistry, RunSpec, RunStatus
from tenxgraph.server._event_log import EventLog, EventLogLimits
from tenxgraph.server._run_stream import RunStreamWriter
from tenxgraph.server._tracing import TRACE_KEY, continued
from tenxgraph.server.remote_tools import RemoteCalls

if TYPE_CHECKING:
    from tenxgraph.core.graph import CompiledGraph
    from tenxgraph.server._context import ServerContext
    from tenxgraph.server._run_stream import StreamEncoder

__all__ = ["SERVER_PARTS", "install_registry", "new_registry", "server_parts"]


class _GraphWriter:
    """Runs a run's graph into its log through the server's stream writer."""

    def __init__(self, record: RunRecord, spec: RunSpec) -> None:
        self._writer = RunStreamWriter(
            cast(EventLog, record.log),
            cast("StreamEncoder", spec.encoder),
            spec.stream_modes,
            record.run_id,
            cast(RemoteCalls, record.remote),
            subgraphs=spec.stream_subgraphs,
        )

    @property
    def output(self) -> Any:
        return self._writer.output

    async def run(self, record: RunRecord, spec: RunSpec) -> RunStatus:
        graph = cast("CompiledGraph[Any]", spec.graph)
        control = cast(RunControl, record.control)
        with continued(record.kwargs.get(TRACE_KEY)):
            return await self._writer.run(
                graph, spec.input, spec.config, spec.invocation_state, control
            )

    def cancelled(self, reason: str) -> None:
        self._writer.cancelled(reason)

    def end(self) -> None:
        self._writer.end()


def server_parts() -> RunParts:
    """The server's parts of a run."""
    return RunParts(
        new_log=lambda run_id, limits: EventLog(limits),
        new_handle=lambda run_id: RunControl(run_id, None),
        new_remote=RemoteCalls,
        open_writer=_GraphWriter,
    )


SERVER_PARTS = server_parts()


def new_registry(
    limits: EventLogLimits | None = None, *, keep_finished: int = 10_000, keep_logs: int = 1_000
) -> RunRegistry:
    """A run registry in memory, for one server process."""
    return RunRegistry(
        SERVER_PARTS,
        limits or EventLogLimits(),
        keep_finished=keep_finished,
        keep_logs=keep_logs,
    )


def install_registry(context: ServerContext) -> RunRegistry:
    """Give the app its run registry (settings ``extra["runs"]``), closed with the server."""
    from tenxgraph.server.runs import run_options

    registry = new_registry(**run_options(context))
    context.state["runs"] = registry
    context.on_shutdown.append(registry.aclose)
    return registry
