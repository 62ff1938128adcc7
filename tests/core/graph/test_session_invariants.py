"""A run's thread session stores exactly what the run holds, and its warm copy never says
otherwise: after removals and additions in one step, after a held result was changed in
place, on a branch, and when a save is refused. Written for what mutation testing of
``core/graph/_session.py`` showed no test noticing (tests/README.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.graph._session import approx_bytes
from tenxgraph.core.state import AgentState, Message, RemoveMessage
from tenxgraph.core.state.message import TokenUsages
from tenxgraph.core.state.message_block import (
    DocumentBlock,
    MediaRef,
    ReasoningBlock,
    VideoBlock,
)
from tenxgraph.errors import NodeError, ThreadNotFoundError, UnstorableStateError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, SqliteCheckpointer


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return InMemoryCheckpointer()
    return SqliteCheckpointer(tmp_path / "threads.sqlite")


def texts(state: AgentState | None) -> list[str]:
    assert state is not None
    return [m.text() for m in state.context]


def one_node(node: Any, checkpointer: Any, state_class: type[AgentState] = AgentState) -> Any:
    graph = StateGraph(state_class)
    graph.add_node("node", node)
    graph.set_entry_point("node")
    return graph.compile(checkpointer)


def reply(state: AgentState) -> Message:
    return Message.text_message(f"reply {len(state.context)}", role="assistant")


@pytest.mark.parametrize(("removed", "added"), [(0, 0), (0, 1), (1, 0), (1, 1), (2, 1), (1, 2)])
def test_a_step_that_removes_and_adds_is_stored_as_the_run_holds_it(
    checkpointer: Any, removed: int, added: int
) -> None:
    """A summary replaces old messages with fewer (2, 1); a trim only removes (1, 0)..."""

    def edit(state: AgentState) -> list[Message | RemoveMessage]:
        gone = [RemoveMessage(m.message_id) for m in state.context[:removed]]
        new = [Message.text_message(f"new {n}", role="assistant") for n in range(added)]
        return [*gone, *new]

    config = {"thread_id": "edited"}
    plain = one_node(reply, checkpointer)
    plain.create_thread(config, [])
    for question in ("a", "b", "c"):  # warm from the first run: each step extends the window
        plain.invoke({"messages": [Message.text_message(question)]}, config)
    editing = one_node(edit, checkpointer)
    held = texts(editing.invoke(None, config)["state"])
    expected = ["a", "reply 1", "b", "reply 3", "c", "reply 5"][removed:]
    assert held == expected + [f"new {n}" for n in range(added)]
    # the same thread read by a graph that holds nothing of it, and a warm turn after
    assert texts(one_node(reply, checkpointer).get_state(config)) == held
    after = editing.invoke({"messages": [Message.text_message("d")]}, config)["state"]
    gone_too = held[removed:]
    assert texts(after) == [*gone_too, "d", *[f"new {n}" for n in range(added)]]
    assert texts(one_node(reply, checkpointer).get_state(config)) == texts(after)


@pytest.mark.parametrize(("deleted", "appended"), [(1, 0), (1, 1), (1, 2), (2, 1), (0, 2)])
def test_a_node_that_edits_the_context_in_place_is_stored_as_it_holds_it(
    checkpointer: Any, deleted: int, appended: int
) -> None:
    """The list a warm run holds is the one its last save wrote: edited in place, its
    length and last message are what tell the save to map the window again."""

    def edit(state: AgentState) -> None:
        del state.context[:deleted]
        for n in range(appended):
            state.context.append(Message.text_message(f"added {n}", role="assistant"))

    config = {"thread_id": "in place"}
    plain = one_node(reply, checkpointer)
    plain.create_thread(config, [])
    for question in ("a", "b"):
        plain.invoke({"messages": [Message.text_message(question)]}, config)
    editing = one_node(edit, checkpointer)
    assert editing.get_state(config) is not None  # kept warm: the run edits the held list
    held = texts(editing.invoke(None, config)["state"])
    expected = ["a", "reply 1", "b", "reply 3"][deleted:] + [f"added {n}" for n in range(appended)]
    assert held == expected
    assert texts(one_node(reply, checkpointer).get_state(config)) == held
    again = texts(editing.invoke(None, config)["state"])
    assert texts(one_node(reply, checkpointer).get_state(config)) == again


@pytest.mark.parametrize("change", ["delete the first", "replace the list's middle"])
def test_a_held_result_changed_in_place_never_reaches_the_thread(
    checkpointer: Any, change: str
) -> None:
    """The warm copy is the list the result holds: changed behind the session's back (the
    last message left as it was), the next run reads the thread as stored."""
    app = one_node(reply, checkpointer)
    config = {"thread_id": "held"}
    app.create_thread(config, [])
    app.invoke({"messages": [Message.text_message("one")]}, config)
    held = app.invoke({"messages": [Message.text_message("two")]}, config)["state"]
    if change == "delete the first":
        del held.context[0]
    else:
        held.context[1:3] = [Message.text_message("not saved")]
    after = app.invoke({"messages": [Message.text_message("three")]}, config)["state"]
    assert texts(after) == ["one", "reply 1", "two", "reply 3", "three", "reply 5"]


def test_a_branched_run_keeps_the_thread_metadata_and_merges_its_own(checkpointer: Any) -> None:
    app = one_node(reply, checkpointer)
    config = {"thread_id": "branched", "thread_metadata": {"team": "red"}}
    app.invoke({"messages": [Message.text_message("one")]}, config)
    app.invoke({"messages": [Message.text_message("two")]}, config)
    first_turn = next(s for s in app.get_state_history(config) if texts(s.state)[-1] == "reply 1")
    branch = {
        "thread_id": "branched",
        "checkpoint_id": first_turn.version,
        "thread_metadata": {"graph_id": "g"},
    }
    result = app.invoke({"messages": [Message.text_message("other")]}, branch)
    assert texts(result["state"]) == ["one", "reply 1", "other", "reply 3"]
    info = app.thread_info(config)
    assert info is not None and info.metadata == {"team": "red", "graph_id": "g"}
    later = {"thread_id": "branched", "thread_metadata": {"graph_id": "h"}}
    app.invoke({"messages": [Message.text_message("more")]}, later)  # the branch, kept warm
    info = app.thread_info(config)
    assert info is not None and info.metadata == {"team": "red", "graph_id": "h"}


def test_a_run_from_a_checkpoint_that_is_gone_says_why_it_may_be(checkpointer: Any) -> None:
    app = one_node(reply, checkpointer)
    config = {"thread_id": "t"}
    app.invoke({"messages": [Message.text_message("one")]}, config)
    with pytest.raises(ThreadNotFoundError) as info:
        app.invoke(None, {**config, "checkpoint_id": 99})
    assert str(info.value) == (
        "thread 't' (user 'default') has no checkpoint 99 to start from "
        "(never saved, or dropped by keep_checkpoints)"
    )


class Notes(AgentState):
    extra: Any = None


def test_an_unstorable_first_state_stores_nothing(checkpointer: Any) -> None:
    """The new thread's first save (the input's) is refused: there is no earlier save to go
    back to, so the run fails naming the field and the thread does not exist."""
    app = one_node(reply, checkpointer, Notes)
    config = {"thread_id": "new"}
    with pytest.raises(UnstorableStateError, match=r"'extra' of Notes cannot be stored"):
        app.invoke({"messages": [Message.text_message("hi")], "state": {"extra": object()}}, config)
    assert app.get_state(config) is None
    result = app.invoke({"messages": [Message.text_message("hi")]}, config)
    assert texts(result["state"]) == ["hi", "reply 1"]


class Scored(AgentState):
    score: float = 0.0


def test_a_refused_save_names_the_state_class_beside_another_graph_s_fields(
    checkpointer: Any,
) -> None:
    """A thread two graphs share carries the fields one does not declare; the other's
    refused save still names its own class."""
    config = {"thread_id": "shared"}
    one_node(reply, checkpointer, Notes).invoke(
        {"messages": [Message.text_message("hi")], "state": {"extra": {"kept": True}}}, config
    )
    scoring = one_node(lambda state: {"score": float("nan")}, checkpointer, Scored)
    with pytest.raises(UnstorableStateError, match=r"'score' of Scored cannot be stored"):
        scoring.invoke({"messages": [Message.text_message("again")]}, config)
    stored = one_node(reply, checkpointer, Notes).get_state(config)
    assert stored is not None and stored.extra == {"kept": True}


def test_a_trim_gives_the_warm_cache_the_bytes_back() -> None:
    def trim(state: AgentState) -> list[RemoveMessage]:
        return [RemoveMessage(m.message_id) for m in state.context if len(m.text()) > 1000]

    checkpointer = InMemoryCheckpointer()
    config = {"thread_id": "big"}
    app = one_node(reply, checkpointer)
    app.create_thread(config, [])
    app.invoke({"messages": [Message.text_message("x" * 2**20)]}, config)
    assert app.warm.bytes > 2**20
    trimming = one_node(trim, checkpointer)
    trimming.invoke(None, config)  # loads the thread, then keeps it
    trimming.invoke(None, config)  # warm: the step that removes nothing extends the window
    assert trimming.warm.bytes < 10_000
    trimming.invoke({"messages": [Message.text_message("x" * 2**20)]}, config)
    assert trimming.warm.bytes < 10_000  # the large input went with the step that took it


def test_the_estimate_counts_every_payload_of_a_block() -> None:
    """Inline media in two refs, a reasoning summary and its details, a document's text and
    excerpt: each counts once."""
    video = VideoBlock(
        media=MediaRef(kind="data", data_base64="A" * 40_000, mime_type="video/mp4"),
        thumbnail=MediaRef(kind="data", data_base64="B" * 30_000, mime_type="image/png"),
    )
    reasoning = ReasoningBlock(summary="s" * 20_000, details=["d" * 10_000])
    document = DocumentBlock(
        media=MediaRef(kind="url", url="https://example.com/a.pdf"),
        text="t" * 20_000,
        excerpt="e" * 10_000,
    )
    for block, payload in [(video, 70_000), (reasoning, 30_000), (document, 30_000)]:
        estimate = approx_bytes(Message(role="assistant", content=[block]))
        assert payload < estimate < payload + 3_000
    plain = Message.text_message("ok", role="assistant")
    usages = TokenUsages(prompt_tokens=3, completion_tokens=1, total_tokens=4)
    counted = plain.model_copy(update={"usages": usages})
    assert approx_bytes(counted) > approx_bytes(plain) + 100  # the usage record is an object


def test_a_failed_route_stores_every_message_of_the_step_before_it(checkpointer: Any) -> None:
    """The step's messages reach the save that records the failure, each once, in order."""

    def answer_thrice(state: AgentState) -> list[Message]:
        return [Message.text_message(t, role="assistant") for t in ("one", "two", "three")]

    def lost(state: AgentState) -> str:
        raise KeyError("nowhere")

    graph = StateGraph(AgentState)
    graph.add_node("answer", answer_thrice)
    graph.set_entry_point("answer")
    graph.add_conditional_edges("answer", lost)
    app = graph.compile(checkpointer)
    config = {"thread_id": "lost"}
    with pytest.raises(NodeError, match="nowhere"):
        app.invoke({"messages": [Message.text_message("hi")]}, config)
    stored = one_node(reply, checkpointer).get_state(config)
    assert stored is not None and stored.execution_meta.status == "error"
    assert texts(stored) == ["hi", "one", "two", "three"]
    lines = one_node(reply, checkpointer).list_messages(config)
    assert [line.message.text() for line in lines] == ["hi", "one", "two", "three"]
