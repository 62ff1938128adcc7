"""Direct tool calls (``app.call_tool``): interrupts, nesting, the context manager, notes.

Issue 17's regressions, each through the public API, most on every backend:
a tool that calls ``interrupt()`` used to leave the thread paused at a node
the app does not have; a direct call from inside a running tool tried to
continue the outer run; direct calls skipped the context manager; a dict key
that is not a string raised instead of giving an error result.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent, interrupt
from tenxgraph.core.llm import FunctionModel, ScriptedModel
from tenxgraph.core.state import Message, ThreadKey, ToolCallBlock, ToolResult
from tenxgraph.core.state.context import SlidingWindowContextManager
from tenxgraph.core.state.pairing import is_paired
from tenxgraph.errors import (
    ConfigError,
    NodeError,
    StateError,
    ThreadBusyError,
    ToolError,
    UsageError,
)
from tenxgraph.storage.checkpointer import Checkpointer, InMemoryCheckpointer

CONFIG = {"thread_id": "direct"}
KEY = ThreadKey("direct")


def approve(action: str) -> str:
    """Ask a human to approve an action."""
    answer = interrupt({"approve": action})
    return f"{action}: {answer}"


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


async def log(checkpointer: Checkpointer) -> list[Message]:
    return [stored.message for stored in await checkpointer.alist_messages(KEY)]


# --- a tool that calls interrupt() ------------------------------------------------------


async def test_a_tool_that_interrupts_is_refused_and_the_thread_stays_usable(
    checkpointer: Checkpointer,
) -> None:
    app = create_agent(ScriptedModel(["hello", "still here"]), [approve], checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "hi")]}, CONFIG)
    before = await checkpointer.aversion(KEY)

    for record in (True, False):
        with pytest.raises(
            ToolError, match=r"'approve' called interrupt\(\).*Nothing was recorded"
        ):
            await app.acall_tool("approve", {"action": "deploy"}, CONFIG, record=record)

    assert await checkpointer.aversion(KEY) == before  # nothing written
    state = await app.aget_state(CONFIG)
    assert state is not None and state.execution_meta.status == "completed"
    result = await app.ainvoke({"messages": [("user", "again")]}, CONFIG)
    assert result["messages"][-1].text() == "still here"
    assert [m.text() for m in await log(checkpointer)] == ["hi", "hello", "again", "still here"]


def test_the_same_tool_still_pauses_and_resumes_in_a_run() -> None:
    model = ScriptedModel(
        [[ToolCallBlock(id="c1", name="approve", args={"action": "deploy"})], "Deployed."]
    )
    app = create_agent(model, [approve, shout], checkpointer=InMemoryCheckpointer())
    paused = app.invoke({"messages": [("user", "deploy it")]}, CONFIG)
    assert paused["interrupt"].value == {"approve": "deploy"}
    with pytest.raises(StateError, match=r"is paused at node 'tools'.*calling a tool directly"):
        app.call_tool("shout", {"text": "x"}, CONFIG)
    assert app.call_tool("shout", {"text": "x"}, CONFIG, record=False).output == "X"
    done = app.invoke({"resume": "yes"}, CONFIG)
    assert done["messages"][-1].text() == "Deployed."


# --- nested calls -----------------------------------------------------------------------


def nesting_app(checkpointer: Checkpointer, record: bool) -> Any:
    holder: dict[str, Any] = {}

    def outer(text: str, config: dict[str, Any]) -> str:
        """Shout a text through another tool."""
        inner = holder["app"].call_tool("shout", {"text": text}, config, record=record)
        return f"outer got {inner.output}"

    async def outer_async(text: str, config: dict[str, Any]) -> str:
        """The same, awaited."""
        inner = await holder["app"].acall_tool("shout", {"text": text}, config, record=record)
        return f"outer got {inner.output}"

    model = ScriptedModel(
        [
            [
                ToolCallBlock(id="c1", name="outer", args={"text": "a"}),
                ToolCallBlock(id="c2", name="outer_async", args={"text": "b"}),
            ],
            "done",
        ]
    )
    holder["app"] = create_agent(model, [outer, outer_async, shout], checkpointer=checkpointer)
    return holder["app"]


async def test_a_tool_can_call_another_tool_unrecorded(checkpointer: Checkpointer) -> None:
    app = nesting_app(checkpointer, record=False)
    result = await app.ainvoke({"messages": [("user", "go")]}, CONFIG)

    assert result["messages"][-1].text() == "done"
    outputs = [b.output for m in result["state"].context for b in m.tool_results()]
    assert outputs == ["outer got A", "outer got B"]
    stored = await log(checkpointer)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool", "assistant"]
    assert is_paired(stored)


async def test_a_recorded_call_from_inside_a_run_is_refused_up_front(
    checkpointer: Checkpointer,
) -> None:
    app = nesting_app(checkpointer, record=True)
    result = await app.ainvoke({"messages": [("user", "go")]}, CONFIG)  # the run is not hurt

    assert result["state"].execution_meta.status == "completed"
    results = [b for m in result["state"].context for b in m.tool_results()]
    assert [b.is_error for b in results] == [True, True]
    for block in results:
        assert "UsageError: cannot record a direct call of 'shout'" in block.output
        assert "pass record=False" in block.output
    assert is_paired(await log(checkpointer))


def test_a_direct_call_can_nest_an_unrecorded_one_but_not_a_recorded_one() -> None:
    holder: dict[str, Any] = {}

    def twice(text: str, config: dict[str, Any]) -> str:
        """Shout a text twice, through the shout tool."""
        first = holder["app"].call_tool("shout", {"text": text}, config, record=False).output
        try:
            holder["app"].call_tool("shout", {"text": text}, config)
        except UsageError:
            return f"{first} {first} (not recorded)"
        return "recorded"

    holder["app"] = app = create_agent(
        ScriptedModel([]), [twice, shout], checkpointer=InMemoryCheckpointer()
    )
    assert app.call_tool("twice", {"text": "hey"}, CONFIG).output == "HEY HEY (not recorded)"
    state = app.get_state(CONFIG)
    assert state is not None
    assert [m.role for m in state.context] == ["assistant", "tool"]


# --- the context manager and what the store cannot hold ---------------------------------


async def test_recorded_calls_are_bounded_by_the_context_manager_like_a_run(
    checkpointer: Checkpointer,
) -> None:
    app = create_agent(
        ScriptedModel([]),
        [shout],
        checkpointer=checkpointer,
        context_manager=SlidingWindowContextManager(window_size=4),
    )
    for index in range(5):
        await app.acall_tool("shout", {"text": f"n{index}"}, CONFIG)
    await app.acall_tool("shout", {"text": "unrecorded"}, CONFIG, record=False)

    state = await app.aget_state(CONFIG)
    assert state is not None
    assert len(state.context) == 4 and is_paired(state.context)
    assert [b.output for m in state.context for b in m.tool_results()] == ["N3", "N4"]
    assert len(await log(checkpointer)) == 10  # the log keeps every call


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({1: "x"}, "the arguments has the key 1, which is not a string"),
        ({"text": {"a": {2: "b"}}}, "the arguments['text']['a'] has the key 2"),
        ({"text": [{None: 1}]}, "the arguments['text'][0] has the key None"),
    ],
)
async def test_keys_that_are_not_strings_give_an_error_result(
    checkpointer: Checkpointer, args: Any, problem: str
) -> None:
    ran: list[Any] = []

    def keep(text: Any) -> str:
        """Keep a value."""
        ran.append(text)
        return "kept"

    app = create_agent(ScriptedModel([]), [keep], checkpointer=checkpointer)
    result = await app.acall_tool("keep", args, CONFIG)

    assert result.is_error and problem in result.output
    assert ran == []
    asked, answered = await log(checkpointer)
    assert asked.tool_calls()[0].args == {} and answered.tool_results() == [result]


async def test_a_state_update_the_state_refuses_is_recorded_as_a_failed_result(
    checkpointer: Checkpointer,
) -> None:
    ran: list[str] = []

    def select(city: str) -> ToolResult:
        """Select a city."""
        ran.append(city)
        return ToolResult(message="selected", state={"no_such_field": city})

    app = create_agent(ScriptedModel([]), [select], checkpointer=checkpointer)
    output = (await app.acall_tool("select", {"city": "Oslo"}, CONFIG)).output

    assert ran == ["Oslo"]  # the tool ran once, and the thread says so
    assert "'select' ran, but its state update was refused" in output
    assert "no_such_field" in output
    asked, answered = await log(checkpointer)
    assert answered.tool_results()[0].is_error
    assert asked.tool_calls()[0].name == "select"


# --- thread statuses --------------------------------------------------------------------


async def test_a_recorded_call_is_refused_on_a_failed_turn(checkpointer: Checkpointer) -> None:
    def down(request: Any) -> str:
        raise RuntimeError("provider down")

    app = create_agent(FunctionModel(down), [shout], checkpointer=checkpointer)
    with pytest.raises(NodeError, match="provider down"):
        await app.ainvoke({"messages": [("user", "hi")]}, CONFIG)
    before = await checkpointer.aversion(KEY)

    with pytest.raises(StateError, match=r"last turn failed.*before calling a tool directly"):
        await app.acall_tool("shout", {"text": "x"}, CONFIG)
    assert await checkpointer.aversion(KEY) == before
    assert (await app.acall_tool("shout", {"text": "x"}, CONFIG, record=False)).output == "X"
    assert await app.arollback(CONFIG)
    assert (await app.acall_tool("shout", {"text": "y"}, CONFIG)).output == "Y"


async def test_a_call_after_a_stopped_turn_answers_its_calls_and_is_kept_by_rollback(
    checkpointer: Checkpointer,
) -> None:
    started = asyncio.Event()

    async def slow() -> str:
        """Take a long time."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    model = ScriptedModel([[ToolCallBlock(id="c1", name="slow")]])
    app = create_agent(model, [slow, shout], checkpointer=checkpointer)
    run = asyncio.create_task(app.ainvoke({"messages": [("user", "go")]}, CONFIG))
    await started.wait()
    assert app.stop(CONFIG)
    assert (await run)["state"].execution_meta.status == "stopped"

    await app.acall_tool("shout", {"text": "x"}, CONFIG)
    assert await app.arollback(CONFIG) is False  # the direct call completed a turn

    stored = await log(checkpointer)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool"]
    assert stored[2].tool_results()[0].is_error  # c1, answered as interrupted
    assert "interrupted" in stored[2].tool_results()[0].output
    assert is_paired(stored)


# --- a note recorded with the call ------------------------------------------------------


def test_a_note_is_recorded_before_the_call_and_the_model_reads_it() -> None:
    model = ScriptedModel(["You have 2 notes."])
    notes: list[str] = []

    def add_note(text: str) -> str:
        """Add a note."""
        notes.append(text)
        return f"{len(notes)} note(s)"

    app = create_agent(model, [add_note], checkpointer=InMemoryCheckpointer())
    app.call_tool("add_note", {"text": "milk"}, CONFIG, note="The user clicked 'remember milk'.")
    app.call_tool("add_note", {"text": "eggs"}, CONFIG)
    app.invoke({"messages": [("user", "how many notes?")]}, CONFIG)

    seen = model.requests[0].messages
    assert [m.role for m in seen] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert seen[0].text() == "The user clicked 'remember milk'."
    assert seen[0].metadata["direct_tool_call"] is True
    assert seen[1].metadata["direct_tool_call"] is True


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"note": "why", "record": False}, "record=False records nothing"),
        ({"note": "  "}, "note must be a non-empty str"),
        ({"note": 5}, "note must be a non-empty str"),
    ],
)
def test_a_note_that_cannot_be_recorded_is_refused_before_the_tool_runs(
    options: dict[str, Any], problem: str
) -> None:
    ran: list[str] = []

    def keep(text: str) -> str:
        """Keep a text."""
        ran.append(text)
        return text

    app = create_agent(ScriptedModel([]), [keep], checkpointer=InMemoryCheckpointer())
    with pytest.raises(ConfigError, match=problem):
        app.call_tool("keep", {"text": "x"}, CONFIG, **options)
    assert ran == [] and app.get_state(CONFIG) is None


async def test_a_recorded_call_from_elsewhere_meets_the_runs_lease(
    checkpointer: Checkpointer,
) -> None:
    started, gate = asyncio.Event(), asyncio.Event()

    async def wait() -> str:
        """Wait for the test."""
        started.set()
        await gate.wait()
        return "waited"

    model = ScriptedModel([[ToolCallBlock(id="c1", name="wait")], "done"])
    app = create_agent(model, [wait, shout], checkpointer=checkpointer)
    run = asyncio.create_task(app.ainvoke({"messages": [("user", "go")]}, CONFIG))
    await started.wait()

    with pytest.raises(ThreadBusyError):
        await app.acall_tool("shout", {"text": "now"}, CONFIG)
    queued = asyncio.create_task(
        app.acall_tool("shout", {"text": "later"}, {**CONFIG, "multitask_strategy": "enqueue"})
    )
    gate.set()
    assert (await run)["messages"][-1].text() == "done"
    assert (await queued).output == "LATER"

    stored = await log(checkpointer)
    assert [m.role for m in stored] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "tool",
    ]
    assert is_paired(stored)
