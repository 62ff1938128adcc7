"""The warm-thread cache is bounded by size as well as by count.

Regression: 60 threads with a 5 MB message each held 363 MB because only the
number of threads was bounded. Here 1 MB messages and a 10 MB bound.
"""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph, create_agent
from tenxgraph.core.graph._session import ThreadSession, approx_bytes
from tenxgraph.core.graph._warm import WarmThreads
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState, Message, ThreadKey
from tenxgraph.core.state.reducers import MessageIndex
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.storage.checkpointer.base import ThreadStamp

MB = 2**20


def reply(state: AgentState) -> dict[str, Any]:
    return {"context": [Message.text_message("ok", role="assistant")]}


def reply_graph() -> StateGraph[AgentState]:
    """One node that answers "ok"."""
    graph: StateGraph[AgentState] = StateGraph(AgentState)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph


def app_with(**options: Any) -> Any:
    return reply_graph().compile(InMemoryCheckpointer(), **options)


def existing(app: Any, thread_id: str) -> dict[str, str]:
    """The config of a thread created empty: its runs keep it warm from the first on."""
    config = {"thread_id": thread_id}
    app.create_thread(config, [])
    return config


def test_large_threads_are_bounded_by_bytes() -> None:
    app = app_with(warm_threads=100, warm_bytes=10 * MB)
    for turn in range(30):
        app.invoke({"messages": [("user", "x" * MB)]}, existing(app, f"t{turn}"))
        assert app.warm.bytes <= 10 * MB
    assert 5 <= len(app.warm) <= 10  # the newest threads fill the budget, no more
    assert app.warm.take(ThreadKey("t29")) is not None  # the newest is kept


def test_a_thread_larger_than_the_budget_stays_only_while_it_is_the_newest() -> None:
    app = app_with(warm_bytes=MB)
    app.invoke({"messages": [("user", "x" * 2 * MB)]}, existing(app, "big"))
    assert len(app.warm) == 1  # the thread being talked to now keeps its warm copy
    app.invoke({"messages": [("user", "small")]}, existing(app, "small"))
    assert len(app.warm) == 1
    assert app.warm.take(ThreadKey("big")) is None
    assert app.warm.bytes < MB


def test_warm_threads_zero_keeps_nothing() -> None:
    app = app_with(warm_threads=0)
    app.invoke({"messages": [("user", "hi")]}, existing(app, "t"))
    assert len(app.warm) == 0


def test_a_thread_is_kept_warm_from_its_second_run() -> None:
    """One-off threads (a new thread per call) would push the conversations out."""
    checkpointer = CountingLoads()
    app = reply_graph().compile(checkpointer, warm_threads=2)
    app.invoke({"messages": [("user", "one")]}, {"thread_id": "chat"})
    assert len(app.warm) == 0  # the run that created it
    app.invoke({"messages": [("user", "two")]}, {"thread_id": "chat"})
    assert (len(app.warm), checkpointer.loads) == (1, 1)  # loaded once, kept from now on
    for n in range(5):
        app.invoke({"messages": [("user", "task")]}, {"thread_id": f"one-off-{n}"})
    app.invoke({"messages": [("user", "three")]}, {"thread_id": "chat"})
    assert (len(app.warm), checkpointer.loads) == (1, 1)  # still warm: not pushed out
    state = app.get_state({"thread_id": "chat"})
    assert state is not None
    assert [m.text() for m in state.context] == ["one", "ok", "two", "ok", "three", "ok"]


@pytest.mark.parametrize("create", ["create_thread", "ensure_thread"])
def test_a_thread_created_before_its_first_run_is_kept_by_the_creation(create: str) -> None:
    """A server creates a background run's thread when the run is posted: the worker that
    starts the run then reads nothing back (the stamp check aside)."""
    checkpointer = CountingLoads()
    app = reply_graph().compile(checkpointer)
    config = {"thread_id": "posted"}
    if create == "create_thread":
        app.create_thread(config, [Message.text_message("before")])
    else:
        app.ensure_thread(config)
    assert len(app.warm) == 1
    app.invoke({"messages": [("user", "go")]}, config)
    assert checkpointer.loads == 0
    state = app.get_state(config)
    assert state is not None
    expected = ["before", "go", "ok"] if create == "create_thread" else ["go", "ok"]
    assert [m.text() for m in state.context] == expected


def test_a_direct_tool_call_that_creates_its_thread_does_not_keep_it() -> None:
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    app = create_agent(ScriptedModel([]), [shout], checkpointer=InMemoryCheckpointer())
    app.call_tool("shout", {"text": "new"}, {"thread_id": "direct"})
    assert len(app.warm) == 0
    app.call_tool("shout", {"text": "again"}, {"thread_id": "direct"})
    assert len(app.warm) == 1


def test_the_estimate_follows_the_payload() -> None:
    small = Message.text_message("hi")
    large = Message.text_message("y" * 100_000)
    assert approx_bytes(small) < 2_000
    assert 100_000 <= approx_bytes(large) < 102_000


def test_a_held_result_keeps_its_messages_when_the_thread_runs_on() -> None:
    app = app_with()
    config = {"thread_id": "held"}
    first = app.invoke({"messages": [("user", "one")]}, config)
    held = first["state"]
    app.invoke({"messages": [("user", "two")]}, config)
    assert [m.text() for m in held.context] == ["one", "ok"]
    # its index gave its tables to the next run; it rebuilds them for its own list
    again = Message.text_message("again")
    assert held.append_messages([held.context[0], again]) == [again]
    assert held.take_direct_additions() == []
    third = app.invoke({"messages": [("user", "three")]}, config)
    assert [m.text() for m in third["state"].context] == ["one", "ok", "two", "ok", "three", "ok"]


def test_a_dropped_result_lends_its_list_to_the_next_run() -> None:
    app = app_with()
    config = existing(app, "dropped")
    list_id = id(app.invoke({"messages": [("user", "one")]}, config)["state"].context)
    # the session still holds that list, so its id cannot have been reused
    second = app.invoke({"messages": [("user", "two")]}, config)
    assert id(second["state"].context) == list_id  # reused, not copied
    assert [m.text() for m in second["state"].context] == ["one", "ok", "two", "ok"]
    third = app.invoke({"messages": [("user", "three")]}, config)
    assert third["state"].context is not second["state"].context  # held: copied
    assert len(second["state"].context) == 4


class CountingLoads(InMemoryCheckpointer):
    """Counts full thread loads, to show which reads the warm cache saves."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    async def aload(self, key: ThreadKey) -> Any:
        self.loads += 1
        return await super().aload(key)


def test_reading_a_thread_then_running_it_loads_it_once() -> None:
    checkpointer = CountingLoads()
    graph = reply_graph()
    writer, reader = graph.compile(checkpointer), graph.compile(checkpointer)
    config = {"thread_id": "t"}
    writer.invoke({"messages": [("user", "one")]}, config)
    assert checkpointer.loads == 0  # a new thread is not read at all
    state = reader.get_state(config)
    assert state is not None and checkpointer.loads == 1
    reader.invoke({"messages": [("user", "two")]}, config)
    assert checkpointer.loads == 1  # the run reused what get_state loaded
    assert [m.text() for m in state.context] == ["one", "ok"]  # the read copy stays as read
    writer.invoke({"messages": [("user", "three")]}, config)  # its warm copy is stale now
    assert checkpointer.loads == 2
    again = reader.get_state(config)
    assert again is not None and checkpointer.loads == 3
    assert [m.text() for m in again.context][-2:] == ["three", "ok"]


def test_a_warm_run_starts_from_the_row_its_last_save_wrote() -> None:
    """A plain step's row is kept as its text only; the next run on the thread reads it back."""
    checkpointer = CountingLoads()
    app = reply_graph().compile(checkpointer)
    config = {"thread_id": "t"}
    app.invoke({"messages": [("user", "one")]}, config)
    app.invoke({"messages": [("user", "two")]}, config)  # loads the new thread once
    third = app.invoke({"messages": [("user", "three")]}, config)["state"]
    assert checkpointer.loads == 1  # the warm session, not a reload
    stored = reply_graph().compile(checkpointer).get_state(config)
    assert stored is not None and checkpointer.loads == 2
    assert third.execution_meta == stored.execution_meta
    assert third.execution_meta.turn_start == 4  # the third turn began after the second's save
    assert [m.text() for m in third.context] == ["one", "ok", "two", "ok", "three", "ok"]


@pytest.mark.parametrize("kept_by", ["its last save", "a read"])
def test_a_warm_run_takes_the_index_its_thread_was_kept_with(
    monkeypatch: pytest.MonkeyPatch, kept_by: str
) -> None:
    """The revived state gets the index the last save (or the load of a read) held, not one
    rebuilt in O(n)."""
    app = app_with()
    config = {"thread_id": "t"}
    if kept_by == "its last save":
        app.create_thread(config, [])
        app.invoke({"messages": [("user", "one")]}, config)
    else:
        app.invoke({"messages": [("user", "one")]}, config)  # creates it: not kept
        assert app.get_state(config) is not None  # loaded, and kept from now on
    built: list[int] = []
    reset = MessageIndex._reset

    def counted(index: MessageIndex, messages: list[Message]) -> None:
        built.append(len(messages))
        reset(index, messages)

    monkeypatch.setattr(MessageIndex, "_reset", counted)
    state = app.invoke({"messages": [("user", "two")]}, config)["state"]
    assert [m.text() for m in state.context] == ["one", "ok", "two", "ok"]
    assert not any(built)  # fresh empty indexes only: the kept one was handed over


# --- The cache itself: its bounds and its byte count ----------------------------------------


class Sized(ThreadSession):
    """A session whose messages are estimated at ``size`` bytes, at version ``version``."""

    def __init__(self, thread_id: str, size: int, version: int = 1) -> None:
        super().__init__(InMemoryCheckpointer(), ThreadKey(thread_id))
        self.size = size
        self.version = version

    @property
    def approx_bytes(self) -> int:
        return self.size


def test_a_cache_at_exactly_its_bounds_keeps_everything() -> None:
    warm = WarmThreads(max_threads=3, max_bytes=300)
    for name in "abc":
        warm.keep(Sized(name, 100))
    assert (len(warm), warm.bytes) == (3, 300)  # both bounds reached, neither passed
    warm.keep(Sized("d", 100))
    assert (len(warm), warm.bytes) == (3, 300)
    assert warm.stamp(ThreadKey("a")) is None  # the oldest went
    assert all(warm.stamp(ThreadKey(name)) is not None for name in "bcd")


def test_a_cache_over_its_bytes_drops_the_oldest_first() -> None:
    warm = WarmThreads(max_threads=10, max_bytes=250)
    for name in "abc":
        warm.keep(Sized(name, 100))
    assert (len(warm), warm.bytes) == (2, 200)
    assert warm.take(ThreadKey("a")) is None
    assert warm.take(ThreadKey("b")) is not None


def test_a_cache_of_one_thread_keeps_the_newest() -> None:
    warm = WarmThreads(max_threads=1)
    warm.keep(Sized("a", 100))
    warm.keep(Sized("b", 100))
    assert (len(warm), warm.bytes) == (1, 100)
    assert warm.take(ThreadKey("b")) is not None


def test_a_thread_kept_again_is_counted_once() -> None:
    warm = WarmThreads(max_threads=2, max_bytes=1_000)
    warm.keep(Sized("a", 300))
    warm.keep(Sized("b", 100))
    warm.keep(Sized("a", 400, version=2))  # its next run: the newer session replaces it
    assert (len(warm), warm.bytes) == (2, 500)
    assert warm.stamp(ThreadKey("a")) == ThreadStamp("", 2)
    warm.keep(Sized("c", 100))  # over the count: "b" is now the oldest
    assert warm.stamp(ThreadKey("b")) is None
    assert (len(warm), warm.bytes) == (2, 500)


def test_taking_a_thread_out_gives_back_its_bytes() -> None:
    warm = WarmThreads()
    assert warm.bytes == 0
    warm.keep(Sized("a", 300))
    warm.keep(Sized("b", 100))
    taken = warm.take(ThreadKey("a"))
    assert taken is not None and taken.key == ThreadKey("a")
    assert (len(warm), warm.bytes) == (1, 100)
    assert warm.take(ThreadKey("a")) is None  # taken once: a run holds it now
    assert warm.take(ThreadKey("b")) is not None
    assert (len(warm), warm.bytes) == (0, 0)


def test_reading_a_stamp_leaves_the_thread_kept() -> None:
    warm = WarmThreads()
    assert warm.stamp(ThreadKey("a")) is None
    warm.keep(Sized("a", 100, version=7))
    assert warm.stamp(ThreadKey("a")) == ThreadStamp("", 7)
    assert warm.stamp(ThreadKey("a", user_id="someone else")) is None  # keyed by user too
    assert (len(warm), warm.bytes) == (1, 100)


def test_compile_keeps_128_threads_and_8_mib_by_default() -> None:
    """The defaults docs/persistence-and-threads.md states."""
    app = reply_graph().compile(InMemoryCheckpointer())
    assert (app.warm.max_threads, app.warm.max_bytes) == (128, 8 * MB)
    assert (WarmThreads().max_threads, WarmThreads().max_bytes) == (128, 8 * MB)
