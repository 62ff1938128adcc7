"""Branches inside a thread: a run (or a state update) from an older checkpoint (issue 33).

LangGraph's time travel, as useStream's regenerate, edit-and-resend and
branch switching use it: the run starts from checkpoint C's state, its first
checkpoint has C as parent, the thread's current state is the new branch's
head, and the branch left stays readable in the history. tenxgraph keeps its
invariants: the log is append-only (no message rewritten or copied, the
branch costs only its new messages), a tool call never loses its result, and
the branch is written under the thread's lease. On every backend.
"""

from __future__ import annotations

import asyncio

import pytest

from tenxgraph.core.graph import StateGraph, create_agent
from tenxgraph.core.graph._tool_node import INTERRUPTED_CALL_TEXT
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import AgentState, Message, ThreadKey, ToolCallBlock
from tenxgraph.core.state.pairing import is_paired
from tenxgraph.errors import NodeError, StateError, ThreadBusyError, ThreadNotFoundError
from tenxgraph.storage.checkpointer import Checkpointer

CONFIG = {"thread_id": "branches"}
KEY = ThreadKey("branches")


def numbered() -> FunctionModel:
    """Answers ``r1``, ``r2``...: each model call says which call it was."""
    calls = [0]

    def reply(request: ModelRequest) -> str:
        calls[0] += 1
        return f"r{calls[0]}"

    return FunctionModel(reply)


def texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text() for m in state.context]


async def log(checkpointer: Checkpointer) -> list[tuple[int, str]]:
    return [
        (line.seq, line.message.model_dump_json())
        for line in await checkpointer.alist_messages(KEY)
    ]


async def test_a_run_from_an_older_checkpoint_branches_the_thread_in_place(
    checkpointer: Checkpointer,
) -> None:
    app = create_agent(numbered(), checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "a")]}, CONFIG)
    await app.ainvoke({"messages": [("user", "b")]}, CONFIG)
    history = await app.aget_state_history(CONFIG)
    assert [(s.version, s.parent_version) for s in history] == [(4, 3), (3, 2), (2, 1), (1, None)]
    old_head = history[0]
    question = next(s for s in history if s.node == "__start__" and texts(s.state)[-1] == "b")
    before = await log(checkpointer)

    # regenerate: continue from the checkpoint that holds the question alone
    await app.ainvoke(None, {**CONFIG, "checkpoint_id": str(question.version)})
    assert texts(await app.aget_state(CONFIG)) == ["a", "r1", "b", "r3"]
    after = await log(checkpointer)
    assert after[: len(before)] == before  # append-only: every earlier seq as it was
    assert len(after) == len(before) + 1  # the branch point copied nothing: one new answer

    # edit and resend: a new question from the end of the first turn
    first_turn = next(s for s in history if texts(s.state) == ["a", "r1"])
    await app.ainvoke(
        {"messages": [("user", "B")]}, {**CONFIG, "checkpoint_id": first_turn.version}
    )
    assert texts(await app.aget_state(CONFIG)) == ["a", "r1", "B", "r4"]
    assert (await log(checkpointer))[: len(after)] == after
    assert len(await log(checkpointer)) == len(after) + 2

    tree = await app.aget_state_history(CONFIG)
    parents = {s.version: s.parent_version for s in tree}
    assert [s.version for s in tree] == sorted(parents, reverse=True)  # newest first
    regenerated = next(s for s in tree if texts(s.state) == ["a", "r1", "b", "r3"])
    assert parents[regenerated.version] == question.version
    edited = next(s for s in tree if texts(s.state) == ["a", "r1", "B"])
    assert parents[edited.version] == first_turn.version
    assert tree[0].parent_version == edited.version  # the current branch's head
    # the branches left stay readable at their versions
    assert texts(await app.aget_state(CONFIG, version=old_head.version)) == ["a", "r1", "b", "r2"]
    assert texts(await app.aget_state({**CONFIG, "checkpoint_id": regenerated.version})) == [
        "a",
        "r1",
        "b",
        "r3",
    ]
    # a run without a checkpoint goes on from the newest branch
    await app.ainvoke({"messages": [("user", "c")]}, CONFIG)
    assert texts(await app.aget_state(CONFIG)) == ["a", "r1", "B", "r4", "c", "r5"]


async def test_starting_from_the_current_checkpoint_is_an_ordinary_run(
    checkpointer: Checkpointer,
) -> None:
    app = create_agent(numbered(), checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "a")]}, CONFIG)
    head = (await app.aget_state_history(CONFIG, limit=1))[0].version
    await app.ainvoke({"messages": [("user", "b")]}, {**CONFIG, "checkpoint_id": head})
    history = await app.aget_state_history(CONFIG)
    assert all(s.parent_version == (s.version - 1 or None) for s in history)


async def test_a_missing_or_bad_checkpoint_is_a_clear_error_and_writes_nothing(
    checkpointer: Checkpointer,
) -> None:
    app = create_agent(numbered(), checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "a")]}, CONFIG)
    stamp = await checkpointer.aversion(KEY)
    with pytest.raises(ThreadNotFoundError, match="has no checkpoint 99"):
        await app.ainvoke({"messages": [("user", "b")]}, {**CONFIG, "checkpoint_id": "99"})
    with pytest.raises(StateError, match="checkpoint_id must name a checkpoint"):
        await app.ainvoke(None, {**CONFIG, "checkpoint_id": "latest"})
    with pytest.raises(ThreadNotFoundError, match="has no checkpoint 1"):
        await app.ainvoke(None, {"thread_id": "never", "checkpoint_id": 1})
    assert await checkpointer.aversion(KEY) == stamp
    assert await app.aget_state({"thread_id": "never"}) is None
    # the lease went with the refused run: the thread takes runs
    await app.ainvoke({"messages": [("user", "b")]}, CONFIG)


async def test_a_tool_call_keeps_its_result_across_a_branch_point(
    checkpointer: Checkpointer,
) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    call = ToolCallBlock(id="c1", name="add", args={"a": 2, "b": 3})
    again = ToolCallBlock(id="c2", name="add", args={"a": 2, "b": 3})
    model = ScriptedModel([call, "five", "five, once more", again, "five again", "moved on"])
    app = create_agent(model, [add], checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "add")]}, CONFIG)
    history = await app.aget_state_history(CONFIG)
    asked = next(s for s in reversed(history) if s.state.execution_meta.next_node == "tools")
    assert texts(asked.state)[-1] == ""  # the call, its result not yet there
    assert not asked.state.execution_meta.tool_ledger  # nor run

    # from the checkpoint between the call and its result: the tool runs on the branch
    await app.ainvoke(None, {**CONFIG, "checkpoint_id": asked.version})
    state = await app.aget_state(CONFIG)
    assert state is not None and is_paired(state.context)
    assert [m.role for m in state.context] == ["user", "assistant", "tool", "assistant"]
    assert texts(state)[-1] == "five, once more"

    # the question again, from before the model's call: a new call and its result
    start = next(s for s in history if s.node == "__start__")
    await app.ainvoke(None, {**CONFIG, "checkpoint_id": start.version})
    state = await app.aget_state(CONFIG)
    assert state is not None and is_paired(state.context)
    assert texts(state)[-1] == "five again"

    # new words at the call: the call is answered as interrupted, never left open
    await app.ainvoke(
        {"messages": [("user", "never mind")]}, {**CONFIG, "checkpoint_id": asked.version}
    )
    state = await app.aget_state(CONFIG)
    assert state is not None and is_paired(state.context)
    assert INTERRUPTED_CALL_TEXT in [m.text() for m in state.context if m.role == "tool"][-1]
    for line in await checkpointer.alist_messages(KEY):  # every branch of the log is paired
        assert line.message.role != "tool" or line.message.content
    model.assert_consumed()


async def test_a_branch_is_written_under_the_threads_lease(checkpointer: Checkpointer) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(state: AgentState) -> Message:
        if texts(state)[-1] == "wait":
            started.set()
            await release.wait()
        return Message.text_message(f"re: {texts(state)[-1]}", role="assistant")

    graph = StateGraph(AgentState)
    graph.add_node("reply", slow)
    graph.set_entry_point("reply")
    app = graph.compile(checkpointer, busy_timeout=30)
    await app.ainvoke({"messages": [("user", "one")]}, CONFIG)
    await app.ainvoke({"messages": [("user", "two")]}, CONFIG)
    history = await app.aget_state_history(CONFIG)
    first = next(s.version for s in history if texts(s.state) == ["one", "re: one"])

    branch = asyncio.create_task(
        app.ainvoke({"messages": [("user", "wait")]}, {**CONFIG, "checkpoint_id": first})
    )
    await started.wait()
    with pytest.raises(ThreadBusyError):
        await app.ainvoke({"messages": [("user", "three")]}, CONFIG)
    with pytest.raises(ThreadBusyError):
        await app.aupdate_state({**CONFIG, "checkpoint_id": first}, [Message.text_message("x")])
    queued = asyncio.create_task(
        app.ainvoke({"messages": [("user", "three")]}, {**CONFIG, "multitask_strategy": "enqueue"})
    )
    await asyncio.sleep(0)
    release.set()
    await branch
    await queued
    # the queued run went on from the branch's head, not from the branch left
    assert texts(await app.aget_state(CONFIG)) == [
        "one",
        "re: one",
        "wait",
        "re: wait",
        "three",
        "re: three",
    ]


async def test_update_state_from_an_older_checkpoint_branches_there(
    checkpointer: Checkpointer,
) -> None:
    app = create_agent(numbered(), checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "a")]}, CONFIG)
    await app.ainvoke({"messages": [("user", "b")]}, CONFIG)
    stored = len(await log(checkpointer))
    version = await app.aupdate_state(
        {"configurable": {**CONFIG, "checkpoint_id": "2"}}, [Message.text_message("x")]
    )
    newest = (await app.aget_state_history(CONFIG, limit=1))[0]
    assert (newest.version, newest.parent_version, newest.node) == (version, 2, "update_state")
    assert texts(await app.aget_state(CONFIG)) == ["a", "r1", "x"]
    assert len(await log(checkpointer)) == stored + 1


async def test_discarding_a_failed_turn_across_a_branch_point_branches_back(
    checkpointer: Checkpointer,
) -> None:
    model = ScriptedModel(
        ["r1", "r2", RuntimeError("provider down"), RuntimeError("down"), RuntimeError("again")]
    )
    app = create_agent(model, checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "a")]}, CONFIG)
    await app.ainvoke({"messages": [("user", "b")]}, CONFIG)
    old_head = (await app.aget_state_history(CONFIG, limit=1))[0].version
    question = next(
        s
        for s in await app.aget_state_history(CONFIG)
        if s.node == "__start__" and texts(s.state)[-1] == "b"
    )
    before = await log(checkpointer)

    # a regenerate that fails continues the turn that began before the branch point
    with pytest.raises(NodeError, match="provider down"):
        await app.ainvoke(None, {**CONFIG, "checkpoint_id": question.version})
    assert await app.arollback(CONFIG)
    state = await app.aget_state(CONFIG)
    assert texts(state) == ["a", "r1"]  # as before the turn
    newest = (await app.aget_state_history(CONFIG, limit=1))[0]
    assert newest.node == "__rollback__" and newest.parent_version == question.version - 1
    assert await log(checkpointer) == before  # nothing removed, nothing added
    assert texts(await app.aget_state(CONFIG, version=old_head)) == ["a", "r1", "b", "r2"]

    # a failed new turn from an older checkpoint goes back to that checkpoint; its input
    # stays in the log (the branches after its start are not cut away)
    with pytest.raises(NodeError, match="down"):
        await app.ainvoke({"messages": [("user", "c")]}, {**CONFIG, "checkpoint_id": old_head})
    assert await app.arollback(CONFIG)
    assert texts(await app.aget_state(CONFIG)) == ["a", "r1", "b", "r2"]
    assert (await log(checkpointer))[: len(before)] == before
    assert len(await log(checkpointer)) == len(before) + 1

    # a failed turn on the branch's head (no branch point after its start) is cut as usual
    kept = await log(checkpointer)
    with pytest.raises(NodeError, match="again"):
        await app.ainvoke({"messages": [("user", "d")]}, CONFIG)
    assert await app.arollback(CONFIG)
    assert await log(checkpointer) == kept
    assert texts(await app.aget_state(CONFIG)) == ["a", "r1", "b", "r2"]
    assert texts(await app.aget_state(CONFIG, version=newest.version)) == ["a", "r1"]


async def test_a_recorded_direct_call_does_not_branch_silently(
    checkpointer: Checkpointer,
) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    app = create_agent(numbered(), [add], checkpointer=checkpointer)
    await app.ainvoke({"messages": [("user", "a")]}, CONFIG)
    stamp = await checkpointer.aversion(KEY)
    at_first = {**CONFIG, "checkpoint_id": 1}
    with pytest.raises(StateError, match="record=False"):
        await app.acall_tool("add", {"a": 2, "b": 3}, at_first)
    assert await checkpointer.aversion(KEY) == stamp
    result = await app.acall_tool("add", {"a": 2, "b": 3}, at_first, record=False)
    assert result.output in (5, "5") and not result.is_error


def test_a_graph_without_a_checkpointer_has_no_checkpoint_to_start_from() -> None:
    app = create_agent(numbered())
    with pytest.raises(StateError, match="no checkpointer"):
        app.invoke({"messages": [("user", "a")]}, {"checkpoint_id": 1})
    with pytest.raises(StateError, match="checkpoint_id must name"):
        app.invoke({"messages": [("user", "a")]}, {"checkpoint_id": "x"})
