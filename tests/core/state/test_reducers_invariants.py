"""The reducers and the message index at their edges: empty updates, deltas, stale indexes.

Written against the mutants ``make mutation`` found surviving (tests/README.md);
each test states what a state field's reducer promises a graph.
"""

from __future__ import annotations

import pytest

from tenxgraph.core.state import AgentState, Message, TextBlock, ToolCallBlock, ToolResultBlock
from tenxgraph.core.state.reducers import (
    MessageIndex,
    add_messages,
    append_items,
    remove_tool_messages,
    replace_messages,
    replace_value,
)
from tenxgraph.errors import ConfigError, StateError


def text(body: str, role: str = "user", message_id: str | None = None) -> Message:
    return Message.text_message(body, role=role, message_id=message_id)  # type: ignore[arg-type]


def delta(body: str) -> Message:
    return Message.text_message(body, role="assistant", delta=True)


def test_add_messages_with_an_empty_update_returns_a_copy_of_the_history() -> None:
    history = [text("hi"), text("hello", "assistant")]
    for empty in ([], (), [delta("chunk")]):
        merged = add_messages(history, empty)
        assert merged == history and merged is not history
    merged.append(text("more"))
    assert len(history) == 2  # the caller's list is never changed


def test_add_messages_skips_known_ids_and_deltas_and_keeps_order() -> None:
    first = text("one", message_id="m1")
    history = [first]
    update = [text("again", message_id="m1"), delta("part"), text("two", message_id="m2")]
    merged = add_messages(history, update)
    assert [(m.message_id, m.text()) for m in merged] == [("m1", "one"), ("m2", "two")]
    assert merged[0] is first and history == [first]


def test_add_messages_finds_a_repeated_id_anywhere_in_a_long_history() -> None:
    history = [text(f"m{i}", message_id=f"m{i}") for i in range(50)]
    for where in (0, 25, 49):
        fresh, again = text("new"), text("resent", message_id=f"m{where}")
        merged = add_messages(history, [fresh, again])
        assert merged == [*history, fresh] and merged[where].text() == f"m{where}"
    unseen = [text("a"), text("b")]
    merged = add_messages(history, unseen)
    assert merged[50:] == unseen and merged[50] is unseen[0]
    merged.append(text("more"))
    assert len(unseen) == 2 and len(history) == 50  # neither input list is changed


def test_add_messages_accepts_one_message_like_value() -> None:
    merged = add_messages([], ("user", "hi"))
    assert [(m.role, m.text()) for m in merged] == [("user", "hi")]
    with pytest.raises(StateError, match=r"^add_messages: right"):
        add_messages([], 42)  # type: ignore[arg-type]


def test_replace_messages_replaces_and_still_drops_deltas() -> None:
    kept = text("new")
    assert replace_messages([text("old")], [delta("chunk"), kept]) == [kept]
    assert replace_messages([text("old")], []) == []
    with pytest.raises(StateError, match=r"^replace_messages: right"):
        replace_messages([], 42)  # type: ignore[arg-type]


def test_append_items_and_replace_value() -> None:
    left = [1, 2]
    assert append_items(left, [3]) == [1, 2, 3] and left == [1, 2]
    assert replace_value("old", "new") == "new"
    assert replace_value([1], None) is None


def test_remove_tool_messages_drops_whole_groups_and_the_raw_calls_with_them() -> None:
    raw = [{"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}}]
    talking = Message(
        role="assistant",
        content=[TextBlock(text="let me look"), ToolCallBlock(id="a", name="t")],
        tools_calls=raw,
    )
    silent = Message(role="assistant", content=[ToolCallBlock(id="b", name="t")], tools_calls=raw)
    answer = Message.tool_message([ToolResultBlock(call_id="a", output="ok")])
    question, reply = text("q"), text("done", "assistant")
    kept = remove_tool_messages([question, talking, answer, silent, reply])
    assert [m.role for m in kept] == ["user", "assistant", "assistant"]
    assert kept[0] is question and kept[2] is reply
    assert kept[1].content == [TextBlock(text="let me look")]
    assert kept[1].tools_calls is None  # no adapter resends calls whose results are gone
    assert kept[1].message_id == talking.message_id
    assert talking.tools_calls == raw  # the stored message is not modified


def test_the_index_tracks_system_and_user_positions_as_it_grows() -> None:
    messages = [text("sys", "system"), text("q")]
    index = MessageIndex(messages)
    assert (index.system_positions, index.user_positions) == ([0], [1])
    added = index.extend(messages, [text("a", "assistant"), text("q2"), text("s2", "system")])
    assert [m.text() for m in added] == ["a", "q2", "s2"]
    assert (index.system_positions, index.user_positions) == ([0, 4], [1, 3])
    assert index.covers(messages) and added[0].message_id in index
    empty = MessageIndex([])
    assert (empty.system_positions, empty.user_positions) == ([], [])
    assert messages[0].message_id not in empty


def test_extend_skips_known_ids_deltas_and_rebuilds_after_direct_edits() -> None:
    messages = [text("q", message_id="m1")]
    index = MessageIndex(messages)
    assert index.extend(messages, [text("dup", message_id="m1"), delta("x")]) == []
    messages.append(text("direct", message_id="m2"))  # behind the index's back
    assert not index.covers(messages)
    assert index.extend(messages, [text("again", message_id="m2")]) == []
    assert [m.message_id for m in messages] == ["m1", "m2"]
    assert index.covers(messages)


@pytest.mark.parametrize("edit", ["replace the last", "delete the first"])
def test_extend_after_an_edit_in_place_knows_the_list_as_it_is(edit: str) -> None:
    """A message edited out of the list behind the index's back can be merged again."""
    messages = [text("a", message_id="a"), text("b", message_id="b")]
    index = MessageIndex(messages)
    gone = messages[-1] if edit == "replace the last" else messages[0]
    if edit == "replace the last":
        messages[-1] = text("c", message_id="c")
    else:
        del messages[0]
    assert index.extend(messages, [gone]) == [gone]
    assert index.covers(messages) and gone.message_id in index


def test_direct_additions_are_what_was_appended_without_the_index() -> None:
    messages = [text("q", message_id="m1")]
    index = MessageIndex(messages)
    assert index.direct_additions(messages) == []
    appended = text("direct", message_id="m2")
    messages.append(appended)
    assert index.direct_additions(messages) == [appended]
    other = [text("elsewhere", message_id="m3"), messages[0]]  # another list: read by id
    assert [m.message_id for m in index.direct_additions(other)] == ["m3"]
    del messages[-1]
    assert index.direct_additions(messages) == []  # covered again


def test_extend_covered_takes_only_plain_messages_on_an_unchanged_list() -> None:
    class Special(Message):
        pass

    messages = [text("q")]
    index = MessageIndex(messages)
    special = Special(role="assistant", content=[TextBlock(text="s")])
    assert index.extend_covered(messages, [special]) is None
    assert index.extend_covered(messages, [("user", "hi")]) is None
    assert index.extend_covered([*messages], [text("a")]) is None
    assert len(messages) == 1  # a None changes nothing
    reply = text("a", "assistant")
    assert index.extend_covered(messages, [reply]) == [reply] and messages[-1] is reply
    messages.append(text("direct"))
    assert index.extend_covered(messages, [text("b")]) is None


def test_a_fresh_states_empty_index_is_handed_over_too() -> None:
    empty: list[Message] = []
    twin = MessageIndex(empty).hand_over(empty)
    assert twin.covers(empty) and not twin.retired
    assert twin.extend(empty, [text("q")]) == empty and twin.user_positions == [0]


def test_hand_over_moves_the_tables_and_retires_the_old_index() -> None:
    messages = [text("sys", "system"), text("q")]
    index = MessageIndex(messages)
    copy = list(messages)
    twin = index.hand_over(copy)
    assert twin.covers(copy) and (twin.system_positions, twin.user_positions) == ([0], [1])
    assert messages[1].message_id in twin
    assert index.retired and not twin.retired
    assert messages[1].message_id not in index
    assert index.direct_additions(messages) == []
    with pytest.raises(ConfigError, match=r"^hand_over needs a list with the same messages$"):
        twin.hand_over(copy[:1])
    with pytest.raises(ConfigError, match=r"^hand_over needs a list with the same messages$"):
        index.hand_over(messages)
    again = index.extend(messages, [text("more")])  # a retired index rebuilds when used
    assert [m.text() for m in again] == ["more"] and index.user_positions == [1, 2]


@pytest.mark.parametrize(("deleted", "appended"), [(2, 0), (1, 1), (1, 2), (2, 3), (0, 1)])
def test_direct_edits_that_keep_or_grow_the_length_are_seen(deleted: int, appended: int) -> None:
    """A node that deletes in place and appends as many or more: the appended messages are
    what the run stores, and the next merge knows the list as it is."""
    state = AgentState()
    history = [text(f"m{n}", message_id=f"m{n}") for n in range(4)]
    state.append_messages(history)
    del state.context[:deleted]
    added = [text(f"added {n}", "assistant") for n in range(appended)]
    state.context.extend(added)
    assert state.take_direct_additions() == added
    more = text("more")
    assert state.append_messages([more, history[-1]]) == [more]  # a known id stays out
    assert state.context == [*history[deleted:], *added, more]


def test_a_last_message_replaced_in_place_is_not_taken_for_the_indexed_one() -> None:
    index = MessageIndex(messages := [text("a", message_id="a"), text("b", message_id="b")])
    assert index.covers(messages)
    messages[-1] = text("c", message_id="c")
    assert not index.covers(messages)
    assert index.direct_additions(messages) == [messages[-1]]
    assert index.extend_covered(messages, [text("d")]) is None  # the general merge, then


def test_the_only_message_replaced_in_place_and_one_appended_are_both_seen() -> None:
    index = MessageIndex(messages := [text("a", message_id="a")])
    messages[0] = text("b", message_id="b")
    messages.append(text("c", message_id="c"))
    assert index.direct_additions(messages) == messages
