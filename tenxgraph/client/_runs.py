"""Runs: stream one, wait for one, or start one in the background and join or cancel it.

Bodies follow the LangGraph server API: ``assistant_id``, ``input``,
``command`` (``{"resume": value}`` answers an interrupt), ``stream_mode``,
``multitask_strategy`` (what to do when the thread is busy: ``reject``,
``enqueue``, ``interrupt``, ``rollback``), ``if_not_exists`` (``"create"``
makes the thread on first use), ``config`` and ``metadata``.
Input messages may be ``Message`` objects; they are sent as their JSON.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from tenxgraph.client._events import StreamPart
from tenxgraph.client._remote import RemoteTools, ToolHandler, with_remote_tools
from tenxgraph.client._stream import StreamRequest, resumable_stream, run_path
from tenxgraph.client._threads import segment
from tenxgraph.client._transport import Transport
from tenxgraph.errors import APIConflictError, APINotFoundError, RunFailedError

__all__ = ["Runs", "run_body"]


def run_body(assistant_id: str, **fields: Any) -> dict[str, Any]:
    """The JSON body of a run: the fields given (None ones left out)."""
    body: dict[str, Any] = {"assistant_id": assistant_id}
    body.update((name, value) for name, value in fields.items() if value is not None)
    return body


class Runs:
    """The ``/threads/{thread_id}/runs`` endpoints (async)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def stream(
        self,
        thread_id: str,
        assistant_id: str,
        *,
        input: Any = None,
        command: dict[str, Any] | None = None,
        stream_mode: str | Sequence[str] | None = None,
        multitask_strategy: str | None = None,
        if_not_exists: str | None = None,
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        tools: Mapping[str, ToolHandler] | None = None,
        max_reconnects: int = 5,
    ) -> AsyncIterator[StreamPart]:
        """Start a run and iterate its events; remote tool calls go to ``tools``' handlers.

        A dropped connection is resumed after the last event received (see
        ``tenxgraph.client._stream``). With ``tools``, a run that pauses for
        remote calls is answered and resumed, and the next run's events
        follow in the same iterator (see ``tenxgraph.client._remote``). The
        iterator ends after the last run's ``end`` or ``error`` part.
        """
        fields: dict[str, Any] = {
            "stream_mode": _modes_for_tools(stream_mode, tools),
            "multitask_strategy": multitask_strategy,
            "if_not_exists": if_not_exists,
            "config": config,
            "metadata": metadata,
        }
        path = f"/threads/{segment(thread_id)}/runs/stream"

        def open_run(resume: dict[str, Any] | None) -> AsyncIterator[StreamPart]:
            first = resume is None
            body = run_body(
                assistant_id,
                input=input if first else None,
                command=command if first else resume,
                **fields,
            )
            request = StreamRequest("POST", path, body, thread_id, max_reconnects=max_reconnects)
            return resumable_stream(self._transport, request)

        async def post(run_id: str, results: list[dict[str, Any]]) -> bool:
            try:
                await self.tool_results(thread_id, run_id, results)
            except (APIConflictError, APINotFoundError):
                return False  # the run waits for no result here: answer by resuming the thread
            return True

        return with_remote_tools(open_run, RemoteTools(tools), post)

    def join_stream(
        self,
        thread_id: str,
        run_id: str,
        *,
        last_event_id: str | None = None,
        max_reconnects: int = 5,
    ) -> AsyncIterator[StreamPart]:
        """Follow a run already going, from after ``last_event_id`` (from its start if None)."""
        request = StreamRequest(
            "GET",
            run_path(thread_id, run_id, "stream"),
            thread_id=thread_id,
            run_id=run_id,
            last_event_id=last_event_id,
            max_reconnects=max_reconnects,
        )
        return resumable_stream(self._transport, request)

    async def wait(
        self,
        thread_id: str,
        assistant_id: str,
        *,
        input: Any = None,
        command: dict[str, Any] | None = None,
        multitask_strategy: str | None = None,
        if_not_exists: str | None = None,
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run to the end and return the final state values (``RunFailedError`` if it failed)."""
        body = run_body(
            assistant_id,
            input=input,
            command=command,
            multitask_strategy=multitask_strategy,
            if_not_exists=if_not_exists,
            config=config,
            metadata=metadata,
        )
        path = f"/threads/{segment(thread_id)}/runs/wait"
        return _values(await self._transport.request("POST", path, json_body=body, until_done=True))

    async def create(
        self,
        thread_id: str,
        assistant_id: str,
        *,
        input: Any = None,
        command: dict[str, Any] | None = None,
        multitask_strategy: str | None = None,
        if_not_exists: str | None = None,
        config: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Start a background run and return it at once (``run_id``, ``status``...)."""
        body = run_body(
            assistant_id,
            input=input,
            command=command,
            multitask_strategy=multitask_strategy,
            if_not_exists=if_not_exists,
            config=config,
            metadata=metadata,
        )
        run: dict[str, Any] = await self._transport.request(
            "POST", f"/threads/{segment(thread_id)}/runs", json_body=body
        )
        return run

    async def get(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """The run (its ``status``: pending, running, success, error, interrupted...)."""
        run: dict[str, Any] = await self._transport.request("GET", run_path(thread_id, run_id))
        return run

    async def list(self, thread_id: str, *, limit: int = 10) -> list[dict[str, Any]]:
        """The thread's runs, newest first."""
        runs: list[dict[str, Any]] = await self._transport.request(
            "GET", f"/threads/{segment(thread_id)}/runs", params={"limit": limit}
        )
        return runs

    async def join(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """Wait for a run to finish and return the final state values."""
        path = run_path(thread_id, run_id, "join")
        return _values(await self._transport.request("GET", path, until_done=True))

    async def cancel(
        self, thread_id: str, run_id: str, *, wait: bool = False, action: str = "interrupt"
    ) -> None:
        """Cancel a run (``action="rollback"`` also deletes it); ``wait`` until it stopped."""
        await self._transport.request(
            "POST",
            run_path(thread_id, run_id, "cancel"),
            params={"wait": "true" if wait else "false", "action": action},
        )

    async def tool_results(
        self, thread_id: str, run_id: str, results: builtins.list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Answer remote tool calls a run waits for: ``[{"call_id", "output", "is_error"}]``.

        The run goes on once every call it waits for is answered. A stream
        given ``tools`` does this itself.
        """
        answer: dict[str, Any] = await self._transport.request(
            "POST", run_path(thread_id, run_id, "tool_results"), json_body={"results": results}
        )
        return answer


def _modes_for_tools(
    modes: str | Sequence[str] | None, tools: Mapping[str, ToolHandler] | None
) -> list[str] | None:
    """The stream modes to ask for: with ``tools``, one that announces a pause."""
    if modes is None:
        return None
    chosen = [modes] if isinstance(modes, str) else list(modes)
    if tools is not None and not {"values", "updates"} & set(chosen):
        chosen.append("updates")
    return chosen


def _values(result: Any) -> dict[str, Any]:
    """The final values of ``wait``/``join``; a failed run's ``__error__`` raises."""
    if isinstance(result, dict) and isinstance(result.get("__error__"), dict):
        error = result["__error__"]
        raise RunFailedError(f"{error.get('error', 'Error')}: {error.get('message', '')}")
    return result if isinstance(result, dict) else {"values": result}
