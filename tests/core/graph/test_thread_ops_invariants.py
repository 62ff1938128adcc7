"""A compiled graph's thread operations as a user calls them: the sync twins pass on every
argument, a fork stays in its tenant, and each new thread starts from its own copy of the
graph's seed. Written for what mutation testing of ``core/graph/_thread_ops.py`` showed no
test noticing (tests/README.md)."""

from __future__ import annotations

from typing import Any

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message
from tenxgraph.storage.checkpointer import InMemoryCheckpointer


class Topic(AgentState):
    topic: str = ""
    seen: list[str] = []


def reply(state: Topic) -> Message:
    return Message.text_message(f"reply {len(state.context)}", role="assistant")


def app_over(state: type[Topic] | Topic = Topic) -> Any:
    graph = StateGraph(state)
    graph.add_node("reply", reply)
    graph.set_entry_point("reply")
    return graph.compile(InMemoryCheckpointer())


def texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text() for m in state.context]


def test_the_sync_thread_api_passes_every_argument_on() -> None:
    app = app_over()
    config = {"thread_id": "t", "user_id": "alice"}
    first = [
        Message.text_message("one"),
        Message.text_message("two", role="assistant"),
        Message.text_message("three"),
    ]
    app.create_thread(config, first, {"topic": "cats"}, metadata={"team": "red"})
    info = app.thread_info(config)
    assert info is not None and info.metadata == {"team": "red"}
    assert app.get_state(config).topic == "cats"

    assert app.update_metadata(config, {"room": 7}) == 2
    app.update_state(config, {"topic": "dogs"}, as_node="editor")
    assert app.get_state(config).topic == "dogs"
    assert app.get_state(config, version=1).topic == "cats"
    assert app.get_state(config, version=1, subgraphs=True).state.topic == "cats"

    history = app.get_state_history(config)
    assert [s.node for s in history][:2] == ["editor", "update_metadata"]
    assert [s.version for s in app.get_state_history(config, limit=1)] == [3]
    assert [s.version for s in app.get_state_history(config, before=3)] == [2, 1]
    edited = app.get_state_history(config, where=lambda info: info.node == "editor")
    assert [s.version for s in edited] == [3]

    assert [line.message.text() for line in app.list_messages(config, offset=1, limit=1)] == ["two"]
    other = {"thread_id": "u", "user_id": "alice"}
    assert app.ensure_thread(other, metadata={"team": "blue"}) is True
    info = app.thread_info(other)
    assert info is not None and info.metadata == {"team": "blue"}
    assert [i.key.thread_id for i in app.list_threads("alice", metadata={"team": "red"})] == ["t"]
    assert len(app.list_threads("alice", offset=1)) == 1
    assert len(app.list_threads("alice", limit=1)) == 1
    assert app.list_threads() == []  # the default tenant has none
    assert app.delete_thread(other) is True
    assert app.thread_info(other) is None
    assert [i.key.thread_id for i in app.list_threads("alice")] == ["t"]


def test_a_fork_stays_in_its_tenant() -> None:
    app = app_over()
    config = {"thread_id": "t", "user_id": "alice"}
    app.invoke({"messages": [Message.text_message("one")]}, config)
    forked = app.fork(config, "copy")
    assert forked["user_id"] == "alice"
    assert texts(app.get_state(forked)) == ["one", "reply 1"]
    assert app.get_state({"thread_id": "copy"}) is None  # nothing in the default tenant


def test_each_new_thread_starts_from_its_own_copy_of_the_seed() -> None:
    def note(state: Topic) -> None:
        state.seen.append("here")  # a field's list changed in place, then saved

    graph = StateGraph(Topic(topic="seeded", seen=["seed"]))
    graph.add_node("note", note)
    graph.set_entry_point("note")
    app = graph.compile(InMemoryCheckpointer())
    one = app.invoke({"messages": [Message.text_message("hi")]}, {"thread_id": "one"})
    assert one["state"].seen == ["seed", "here"]
    two = app.invoke({"messages": [Message.text_message("hi")]}, {"thread_id": "two"})
    assert two["state"].seen == ["seed", "here"]
    assert app.get_state({"thread_id": "one"}).seen == ["seed", "here"]
