"""The graph's thread reads besides the state: listing lines, listings, the whole log, the row.

They are how code above the runtime (the server) reads threads without
touching the checkpointer, so each is checked on every backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tenxgraph.core.graph import CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message, SlidingWindowContextManager
from tenxgraph.errors import StateError
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tenxgraph.storage.checkpointer.base import Checkpointer


def echo(state: AgentState) -> list[Message]:
    return [Message.text_message(f"echo {state.context[-1].text()}", role="assistant")]


def build(checkpointer: Checkpointer | None, window: int = 40) -> CompiledGraph[AgentState]:
    graph = StateGraph(AgentState, SlidingWindowContextManager(window_size=window))
    graph.add_node("echo", echo)
    graph.set_entry_point("echo")
    return graph.compile(checkpointer)


async def test_a_thread_s_listing_line_and_the_tenant_s_listing(checkpointer: Checkpointer) -> None:
    app = build(checkpointer)
    ana = {"thread_id": "a", "user_id": "ana"}
    assert await app.athread_info(ana) is None
    await app.aensure_thread(ana, metadata={"team": "red", "tier": {"level": 1}})
    await app.aensure_thread({"thread_id": "b", "user_id": "ana"}, metadata={"team": "blue"})
    await app.aensure_thread({"thread_id": "a", "user_id": "bob"}, metadata={"team": "red"})
    await app.ainvoke({"messages": [Message.text_message("hi")]}, ana)  # a: updated last

    info = await app.athread_info(ana)
    assert info is not None
    assert (info.key.thread_id, info.key.user_id) == ("a", "ana")
    assert info.metadata == {"team": "red", "tier": {"level": 1}}
    newest = (await app.aget_state_history(ana, limit=1))[0]
    assert info.log_length == 2 and info.version == newest.version > 1
    assert info.updated_at >= info.created_at

    listed = await app.alist_threads("ana")
    assert [i.key.thread_id for i in listed] == ["a", "b"]  # newest update first
    red = await app.alist_threads("ana", metadata={"tier": {"level": 1}})
    assert [i.key.thread_id for i in red] == ["a"]
    assert [i.key.thread_id for i in await app.alist_threads("ana", offset=1, limit=5)] == ["b"]
    assert [i.key.user_id for i in await app.alist_threads("bob")] == ["bob"]  # tenants apart
    assert await app.alist_threads("carol") == []


async def test_the_log_keeps_what_the_window_left(checkpointer: Checkpointer) -> None:
    app = build(checkpointer, window=2)
    config = {"thread_id": "long"}
    for text in ("one", "two", "three"):
        await app.ainvoke({"messages": [Message.text_message(text)]}, config)

    state = await app.aget_state(config)
    assert state is not None and len(state.context) == 2  # the window holds the last two
    log = await app.alist_messages(config)
    assert [s.seq for s in log] == list(range(6))
    assert [s.message.text() for s in log][:2] == ["one", "echo one"]
    page = await app.alist_messages(config, offset=4, limit=1)
    assert [(s.seq, s.message.text()) for s in page] == [(4, "three")]
    assert await app.alist_messages({"thread_id": "unknown"}) == []

    stored = await app.aload_thread(config)
    assert stored is not None and stored.log_length == 6
    assert [m.text() for m in stored.context] == [m.text() for m in state.context]
    covered = [seq for start, end in stored.window for seq in range(start, end)]
    assert covered == [4, 5]  # the window's ranges over the log name its messages
    assert "execution_meta" in stored.values  # JSON as stored, not decoded
    assert await app.aload_thread({"thread_id": "unknown"}) is None


def test_sync_twins_read_the_same(tmp_path: Path) -> None:
    app = build(SqliteCheckpointer(tmp_path / "t.sqlite"))
    config = {"thread_id": "t"}
    app.invoke({"messages": [Message.text_message("hi")]}, config)
    info = app.thread_info(config)
    assert info is not None and info.log_length == 2
    assert [i.key for i in app.list_threads()] == [info.key]
    assert [s.message.text() for s in app.list_messages(config)] == ["hi", "echo hi"]
    stored = app.load_thread(config)
    assert stored is not None and stored.version == info.version


async def test_reads_need_a_checkpointer_and_a_thread_id(tmp_path: Path) -> None:
    bare = build(None)
    with pytest.raises(StateError, match="no checkpointer"):
        await bare.athread_info({"thread_id": "t"})
    with pytest.raises(StateError, match="no checkpointer"):
        await bare.alist_threads()
    app = build(SqliteCheckpointer(tmp_path / "t.sqlite"))
    with pytest.raises(StateError, match="thread_id"):
        await app.athread_info({})
    with pytest.raises(StateError, match="thread_id"):
        await app.alist_messages({"configurable": {}})


async def test_a_run_s_thread_metadata_is_merged_by_its_own_first_save(
    checkpointer: Checkpointer,
) -> None:
    app = build(checkpointer)
    config = {"thread_id": "tagged", "thread_metadata": {"graph_id": "g"}}
    await app.ainvoke({"messages": [Message.text_message("hi")]}, config)
    info = await app.athread_info(config)
    assert info is not None and info.metadata == {"graph_id": "g"}
    plain = {"thread_id": "plain"}
    await app.ainvoke({"messages": [Message.text_message("hi")]}, plain)
    saves = len(await app.aget_state_history(plain))
    assert len(await app.aget_state_history(config)) == saves  # no save of its own
    await app.aupdate_metadata(config, {"team": "red"})
    version = (await app.aget_state_history(config, limit=1))[0].version
    await app.ainvoke({"messages": [Message.text_message("again")]}, config)
    newest = (await app.aget_state_history(config, limit=1))[0].version
    assert newest == version + saves  # the same saves again, none for the metadata it holds
    info = await app.athread_info(config)
    assert info is not None and info.metadata == {"graph_id": "g", "team": "red"}

    moved = {"thread_id": "tagged", "thread_metadata": {"graph_id": "h"}}
    await app.ainvoke({"messages": [Message.text_message("moved")]}, moved)
    info = await app.athread_info(config)
    assert info is not None and info.metadata == {"graph_id": "h", "team": "red"}


async def test_thread_metadata_that_is_no_dict_is_refused_before_anything_is_stored(
    checkpointer: Checkpointer,
) -> None:
    app = build(checkpointer)
    config = {"thread_id": "bad", "thread_metadata": ["graph_id"]}
    with pytest.raises(StateError, match="thread_metadata"):
        await app.ainvoke({"messages": [Message.text_message("hi")]}, config)
    assert await app.athread_info(config) is None
