"""The remote-tool loop on its own: a run that ends paused is answered by resuming the thread.

The live tests (test_python_client.py) cover the server that waits in the
stream; a run that ends paused instead (a server that does not wait, or a
post it refused) takes the other path, driven here by scripted runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tenxgraph.client import EndPart, MetadataPart, RemoteToolCallPart, StreamPart, ValuesPart
from tenxgraph.client._remote import RemoteTools, with_remote_tools
from tenxgraph.core.state import RemoteToolCallBlock

CALL = {"type": "remote_tool_call", "id": "c1", "name": "clock", "args": {"tz": "UTC"}}
VALUE = {"type": "remote_tool_calls", "calls": [{"call": CALL}]}
PAUSE = {"__interrupt__": [{"value": VALUE, "kind": "remote_tool_calls"}]}


def run(run_id: str, values: dict[str, Any]) -> list[StreamPart]:
    return [
        MetadataPart("metadata", {"run_id": run_id}, "1", run_id=run_id),
        ValuesPart("values", values, "2", values=values),
        EndPart("end", None, "3"),
    ]


async def test_a_run_that_ends_paused_is_resumed_with_the_results() -> None:
    commands: list[dict[str, Any] | None] = []
    posted: list[Any] = []

    async def open_run(command: dict[str, Any] | None) -> AsyncIterator[StreamPart]:
        commands.append(command)
        for part in run("r1", PAUSE) if command is None else run("r2", {"done": True}):
            yield part

    async def refuse(run_id: str, results: list[dict[str, Any]]) -> bool:
        posted.append(results)
        return False

    tools = RemoteTools({"clock": lambda tz: f"noon {tz}"})
    parts = [part async for part in with_remote_tools(open_run, tools, refuse)]
    assert commands == [
        None,
        {"resume": {"tool_results": [{"call_id": "c1", "output": "noon UTC", "is_error": False}]}},
    ]
    assert posted == []  # no call came in the stream, so nothing was posted
    kinds = [type(part).__name__ for part in parts]
    assert kinds == [
        "MetadataPart",
        "ValuesPart",
        "RemoteToolCallPart",  # shown before the resume; the paused run's end is not
        "MetadataPart",
        "ValuesPart",
        "EndPart",
    ]


async def test_a_streamed_call_whose_post_is_refused_is_answered_by_resume() -> None:
    commands: list[dict[str, Any] | None] = []
    posted: list[tuple[str, Any]] = []
    call = RemoteToolCallBlock.model_validate(CALL)

    async def open_run(command: dict[str, Any] | None) -> AsyncIterator[StreamPart]:
        commands.append(command)
        if command is None:
            yield MetadataPart("metadata", {}, "1", run_id="r1")
            yield RemoteToolCallPart("remote_tool_call", CALL, "2", call=call)
            yield ValuesPart("values", PAUSE, "3", values=PAUSE)  # the same call, announced again
        yield EndPart("end", None, "9")

    async def refuse(run_id: str, results: list[dict[str, Any]]) -> bool:
        posted.append((run_id, results))
        return False

    runs: list[str] = []

    async def failing_clock(tz: str) -> str:
        runs.append(tz)
        raise TimeoutError("clock is slow")

    tools = RemoteTools({"clock": failing_clock})
    parts = [part async for part in with_remote_tools(open_run, tools, refuse)]
    error = {"call_id": "c1", "output": "TimeoutError: clock is slow", "is_error": True}
    assert posted == [("r1", [error])]  # tried in the stream first, once
    assert runs == ["UTC"]  # the handler ran once; its result went into the resume
    assert commands == [None, {"resume": {"tool_results": [error]}}]
    assert sum(isinstance(part, RemoteToolCallPart) for part in parts) == 1
    assert [part.id for part in parts if isinstance(part, EndPart)] == ["9"]


async def test_without_handlers_a_paused_run_just_ends() -> None:
    async def open_run(command: dict[str, Any] | None) -> AsyncIterator[StreamPart]:
        for part in run("r1", PAUSE):
            yield part

    async def never(run_id: str, results: list[dict[str, Any]]) -> bool:
        raise AssertionError("nothing is posted without handlers")

    parts = [part async for part in with_remote_tools(open_run, RemoteTools(None), never)]
    assert [type(part) for part in parts] == [MetadataPart, ValuesPart, EndPart]


async def test_a_pause_the_final_state_no_longer_holds_is_not_answered() -> None:
    async def open_run(command: dict[str, Any] | None) -> AsyncIterator[StreamPart]:
        yield MetadataPart("metadata", {}, "1", run_id="r1")
        yield ValuesPart("values", PAUSE, "2", values=PAUSE)  # the thread as the run found it
        yield ValuesPart("values", {"moved": "on"}, "3", values={"moved": "on"})
        yield EndPart("end", None, "4")

    async def never(run_id: str, results: list[dict[str, Any]]) -> bool:
        raise AssertionError("nothing is posted")

    tools = RemoteTools({"clock": lambda tz: "never called"})
    parts = [part async for part in with_remote_tools(open_run, tools, never)]
    assert [part.id for part in parts] == ["1", "2", "3", "4"]  # no resume, no remote call part


async def test_a_user_interrupt_shaped_like_the_remote_pause_is_not_answered() -> None:
    question = {"__interrupt__": [{"value": VALUE, "id": "i1", "node": "ask", "when": "inside"}]}

    async def open_run(command: dict[str, Any] | None) -> AsyncIterator[StreamPart]:
        assert command is None, "no resume"
        for part in run("r1", question):
            yield part

    async def never(run_id: str, results: list[dict[str, Any]]) -> bool:
        raise AssertionError("nothing is posted")

    tools = RemoteTools({"clock": lambda tz: "never called"})
    parts = [part async for part in with_remote_tools(open_run, tools, never)]
    assert [type(part) for part in parts] == [MetadataPart, ValuesPart, EndPart]
