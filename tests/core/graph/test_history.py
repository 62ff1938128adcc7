from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import CheckpointInfo, CompiledGraph, StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.errors import StateError, ThreadNotFoundError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer
from tenxgraph.storage.checkpointer.base import ThreadWrite


class Notes(AgentState):
    topic: str = ""


def echo(state: Notes) -> list[Message]:
    return [Message.text_message(f"echo {state.context[-1].text()}", role="assistant")]


def build(path: Path, **compile_options: Any) -> CompiledGraph[Notes]:
    graph = StateGraph(Notes)
    graph.add_node("echo", echo)
    graph.set_entry_point("echo")
    return graph.compile(SqliteCheckpointer(path / "t.sqlite"), **compile_options)


def test_history_update_and_fork(tmp_path: Path) -> None:
    app = build(tmp_path)
    config = {"thread_id": "main"}
    app.invoke({"messages": [Message.text_message("one")]}, config)
    app.invoke({"messages": [Message.text_message("two")]}, config)

    history = app.get_state_history(config)
    versions = [snapshot.version for snapshot in history]
    assert versions == sorted(versions, reverse=True)
    texts = [[m.text() for m in snapshot.state.context] for snapshot in history]
    assert texts[0] == ["one", "echo one", "two", "echo two"]
    assert ["one", "echo one"] in texts
    first_turn = next(
        s for s in history if [m.text() for m in s.state.context] == ["one", "echo one"]
    )

    version = app.update_state(config, {"topic": "cats"})
    assert version == history[0].version + 1
    assert app.get_state(config).topic == "cats"
    assert app.get_state_history(config)[0].node == "update_state"

    fork = app.fork(config, "branch", version=first_turn.version)
    forked = app.invoke({"messages": [Message.text_message("other")]}, fork)
    assert [m.text() for m in forked["state"].context] == ["one", "echo one", "other", "echo other"]
    original = app.get_state(config)
    assert [m.text() for m in original.context] == ["one", "echo one", "two", "echo two"]
    past = app.get_state(config, version=first_turn.version)
    assert [m.text() for m in past.context] == ["one", "echo one"]

    with pytest.raises(StateError, match="already exists"):
        app.fork(config, "branch")
    with pytest.raises(ThreadNotFoundError, match="no checkpoint 999"):
        app.get_state(config, version=999)
    with pytest.raises(StateError, match="unknown state field"):
        app.update_state(config, {"nope": 1})


def test_update_state_on_a_paused_thread_then_resume(tmp_path: Path) -> None:
    app = build(tmp_path, interrupt_before=["echo"])
    config = {"thread_id": "paused"}
    app.invoke({"messages": [Message.text_message("draft")]}, config)
    app.update_state(config, [Message.text_message("corrected")])
    assert app.get_state(config).is_interrupted()
    done = app.invoke({"resume": None}, config)
    assert [m.text() for m in done["state"].context] == ["draft", "corrected", "echo corrected"]


def test_retention_keeps_a_paused_run_resumable(tmp_path: Path) -> None:
    graph = StateGraph(Notes)
    graph.add_node("echo", echo)
    graph.set_entry_point("echo")
    checkpointer = SqliteCheckpointer(tmp_path / "r.sqlite", keep_checkpoints=2)
    app = graph.compile(checkpointer, interrupt_after=["echo"])
    config = {"thread_id": "r"}
    for i in range(5):
        app.invoke({"messages": [Message.text_message(f"m{i}")]}, config)
        app.invoke({"resume": None}, config)
    app.invoke({"messages": [Message.text_message("last")]}, config)
    assert len(app.get_state_history(config)) == 2
    done = app.invoke({"resume": None}, config)
    assert done["state"].execution_meta.status == "completed"
    assert done["state"].context[-1].text() == "echo last"


async def test_history_chooses_checkpoints_by_what_they_record(tmp_path: Path) -> None:
    app = build(tmp_path)
    config = {"thread_id": "main"}
    for text in ("one", "two", "three"):
        await app.ainvoke({"messages": [Message.text_message(text)]}, config)
    edited = await app.aupdate_state(config, {"topic": "cats"})
    everything = await app.aget_state_history(config)
    echoes = [s.version for s in everything if s.node == "echo"]
    assert len(echoes) >= 3 and everything[0].version == edited

    chosen = await app.aget_state_history(
        config, limit=1, before=echoes[0], where=lambda info: info.node == "echo"
    )
    assert [s.version for s in chosen] == [echoes[1]]
    assert [m.text() for m in chosen[0].state.context][-1] == "echo two"
    seen: list[CheckpointInfo] = []
    completed = await app.aget_state_history(
        config, where=lambda info: seen.append(info) is None and info.status == "completed"
    )
    assert {s.version for s in completed} == {
        s.version for s in everything if s.state.execution_meta.status == "completed"
    }
    assert [info.version for info in seen] == [s.version for s in everything]
    assert [info.node for info in seen] == [s.node for s in everything]
    assert await app.aget_state_history({"thread_id": "none"}, before=3) == []


class CallLog(InMemoryCheckpointer):
    """Records the storage calls that creating a thread makes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def atake_thread(self, key: ThreadKey, owner: str, seconds: float) -> Any:
        self.calls.append("atake_thread")
        return await super().atake_thread(key, owner, seconds)

    async def aversion(self, key: ThreadKey) -> Any:
        self.calls.append("aversion")
        return await super().aversion(key)

    async def aload(self, key: ThreadKey) -> Any:
        self.calls.append("aload")
        return await super().aload(key)

    async def asave(self, key: ThreadKey, write: ThreadWrite) -> Any:
        self.calls.append("asave" + " and release" * write.release_lease)
        return await super().asave(key, write)

    async def arelease_lease(self, key: ThreadKey, owner: str) -> None:
        self.calls.append("arelease_lease")
        await super().arelease_lease(key, owner)


async def test_creating_a_thread_is_a_lease_and_a_save_that_gives_it_up() -> None:
    """The lease's stamp says the thread is new (no read), and the save releases the lease."""
    checkpointer = CallLog()
    graph = StateGraph(Notes)
    graph.add_node("echo", echo)
    graph.set_entry_point("echo")
    app = graph.compile(checkpointer)
    config = {"thread_id": "t", "user_id": "ana"}
    assert await app.aensure_thread(config) is True
    assert checkpointer.calls == ["atake_thread", "asave and release"]
    checkpointer.calls.clear()
    assert await app.aensure_thread(config) is False
    assert checkpointer.calls == ["atake_thread", "arelease_lease"]
    await app.acreate_thread({"thread_id": "seeded"}, [Message.text_message("old")])
    with pytest.raises(StateError, match="already exists"):
        await app.acreate_thread({"thread_id": "seeded"}, [])
    holder, stamp = await checkpointer.atake_thread(ThreadKey("seeded"), "next", 5)
    assert holder is None and stamp is not None  # every call above let the thread go


async def test_ensure_thread_and_update_metadata(tmp_path: Path) -> None:
    app = build(tmp_path)
    assert app.checkpointer is not None
    config = {"thread_id": "t", "user_id": "ana"}
    key = ThreadKey("t", "ana")
    assert await app.aensure_thread(config, metadata={"team": "red"}) is True
    assert await app.aensure_thread(config, metadata={"team": "blue"}) is False
    info = await app.checkpointer.athread_info(key)
    assert info is not None and info.metadata == {"team": "red"}
    history = await app.aget_state_history(config)
    assert [(s.version, s.node) for s in history] == [(1, "create_thread")]
    assert history[0].state.context == [] and history[0].state.topic == ""

    await app.ainvoke({"messages": [Message.text_message("hi")]}, config)
    before = await app.aget_state(config)
    version = await app.aupdate_metadata(config, {"team": None, "tier": 2})
    info = await app.checkpointer.athread_info(key)
    assert info is not None and info.metadata == {"team": None, "tier": 2}
    newest = (await app.aget_state_history(config, limit=1))[0]
    assert (newest.version, newest.node) == (version, "update_metadata")
    after = await app.aget_state(config)
    assert before is not None and after is not None
    assert after.model_dump() == before.model_dump()
    with pytest.raises(ThreadNotFoundError, match="'other'"):
        await app.aupdate_metadata({"thread_id": "other"}, {"x": 1})

    other = {"thread_id": "seeded"}
    await app.acreate_thread(other, [Message.text_message("old")], metadata={"source": "import"})
    info = await app.checkpointer.athread_info(ThreadKey("seeded"))
    assert info is not None and info.metadata == {"source": "import"}
