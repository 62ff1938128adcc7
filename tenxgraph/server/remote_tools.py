"""Browser-side (remote) tools over HTTP: stream the pending calls, take their results.

When the model calls a ``RemoteTool`` the graph pauses (an interrupt whose
value lists the calls, see docs/tools.md). A run started over HTTP does not
end there: it streams one ``remote_tool_call`` event per call (data: the
``RemoteToolCallBlock`` JSON) and waits. The client runs the tools and posts
their results to ``POST /threads/{thread_id}/runs/{run_id}/tool_results``;
once every pending call is answered the same run resumes the graph, so a
client reading the run's stream sees it go on. A call still unanswered at its
deadline (the tool's ``timeout``) is answered by the graph with a failed
"timed out" result when the run continues at that moment (the timer here).

The body: ``{"results": [{"call_id": ..., "output": JSON, "is_error": false}]}``
(``tool_call_id``/``content`` are accepted for ``call_id``/``output``; a single
result may be sent without the list, or without ``results``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body

from tenxgraph.core.state.remote_calls import remote_tool_result, remote_tool_resume
from tenxgraph.errors import StateError
from tenxgraph.server._context import Context, User
from tenxgraph.server._limits import CheckedJsonRoute
from tenxgraph.server.http_errors import bad_request

if TYPE_CHECKING:
    from tenxgraph.core.graph import PendingRemoteCall

__all__ = ["RemoteCalls", "router", "tool_results_of"]

router = APIRouter(tags=["runs"], route_class=CheckedJsonRoute)


class RemoteCalls:
    """The remote calls a run waits for, the results posted so far, and the deadline timer."""

    def __init__(self) -> None:
        self.pending: dict[str, PendingRemoteCall] = {}
        self._announced: set[str] = set()
        self._results: dict[str, dict[str, Any]] = {}
        self._changed = asyncio.Event()

    def expect(self, calls: list[PendingRemoteCall]) -> list[PendingRemoteCall]:
        """The run paused for ``calls``; return those not announced to the client before."""
        self.pending = {entry.call.id: entry for entry in calls}
        new = [entry for entry in calls if entry.call.id not in self._announced]
        self._announced.update(entry.call.id for entry in new)
        return new

    @property
    def waiting(self) -> bool:
        """True while the run waits for results."""
        return bool(self.pending)

    def submit(self, results: list[dict[str, Any]]) -> list[str]:
        """Take results for pending calls (all or none); return the calls still unanswered.

        A 409 when the run waits for no result; ``StateError`` (422) for a
        call that is not pending, or answered already.
        """
        if not self.pending:
            bad_request("this run is not waiting for remote tool results", 409)
        seen: set[str] = set()
        for index, result in enumerate(results):
            call_id = result["call_id"]
            if call_id not in self.pending:
                raise StateError(
                    f"results[{index}]: call {call_id!r} is not waiting for a result "
                    f"(waiting: {sorted(self.pending)})"
                )
            if call_id in self._results or call_id in seen:
                raise StateError(f"results[{index}]: call {call_id!r} was answered already")
            seen.add(call_id)
        for result in results:
            self._results[result["call_id"]] = result
        self._changed.set()
        return [call_id for call_id in self.pending if call_id not in self._results]

    async def next_resume(self) -> dict[str, Any]:
        """Wait until every pending call is answered or the first deadline passes.

        Returns the graph's input that continues the run: the results so far
        as a resume (calls past their deadline are answered "timed out" by the
        graph; others not yet due make it pause again).
        """
        while True:
            unanswered = [e for e in self.pending.values() if e.call.id not in self._results]
            if not unanswered:
                break
            due = min(entry.deadline for entry in unanswered)
            seconds = (due - datetime.now(UTC)).total_seconds()
            if seconds <= 0:
                break
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), seconds)
            except TimeoutError:
                break
        answers = [self._results.pop(i) for i in list(self.pending) if i in self._results]
        self.pending = {}
        return {"resume": remote_tool_resume(answers)}


def tool_results_of(body: Any) -> list[dict[str, Any]]:
    """The posted results as the graph's ``tool_results`` entries; ``StateError`` if malformed."""
    if isinstance(body, Mapping) and ("results" in body or "tool_results" in body):
        body = body.get("results", body.get("tool_results"))
    items = body if isinstance(body, list) else [body]
    if not items:
        raise StateError("results: give at least one result")
    return [_entry(item, index) for index, item in enumerate(items)]


def _entry(item: Any, index: int) -> dict[str, Any]:
    where = f"results[{index}]"
    if not isinstance(item, Mapping):
        raise StateError(f"{where}: expected {{'call_id', 'output', 'is_error'}}, got {item!r}")
    unknown = set(item) - {"call_id", "tool_call_id", "output", "content", "is_error"}
    if unknown:
        raise StateError(f"{where}: unknown key(s) {sorted(unknown)}")
    call_id = item.get("call_id", item.get("tool_call_id"))
    if not isinstance(call_id, str) or not call_id:
        raise StateError(f"{where}: 'call_id' must be the id of a pending call")
    if "output" not in item and "content" not in item:
        raise StateError(f"{where}: 'output' is missing")
    is_error = item.get("is_error", False)
    if not isinstance(is_error, bool):
        raise StateError(f"{where}: 'is_error' must be true or false")
    output = item["output"] if "output" in item else item["content"]
    return remote_tool_result(call_id, output, is_error=is_error)


@router.post("/threads/{thread_id}/runs/{run_id}/tool_results")
async def post_tool_results(
    thread_id: str,
    run_id: str,
    body: Annotated[Any, Body()],
    context: Context,
    user: User,
) -> dict[str, Any]:
    """Answer remote tool calls the run waits for; it goes on once all are answered.

    409 when the run waits for no result (it ended, or has not paused); 422
    for a result that answers no pending call. Posted to a worker that does
    not hold the run, they are carried to its holder (``_tool_relay``); 504
    when the holder does not take them in time.
    """
    from tenxgraph.server.runs import manager_of, run_or_404

    record = await run_or_404(context, user, thread_id, run_id)
    results = tool_results_of(body)
    if record.finished:
        bad_request(f"run {run_id!r} ended ({record.status}); resume the thread instead", 409)
    pending = await manager_of(context).submit_tool_results(record, results)
    return {"run_id": run_id, "accepted": [r["call_id"] for r in results], "pending": pending}
