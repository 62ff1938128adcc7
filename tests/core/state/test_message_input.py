"""Message-like input (pairs and role/content dicts) becomes Message, or fails saying where."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.state import (
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    add_messages,
    as_message,
    as_messages,
    replace_messages,
)
from tenxgraph.errors import StateError


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("user", "user"),
        ("human", "user"),
        ("assistant", "assistant"),
        ("ai", "assistant"),
        ("system", "system"),
    ],
)
def test_a_pair_becomes_a_text_message_with_the_role_it_names(role: str, expected: str) -> None:
    message = as_message((role, "hi"))
    assert isinstance(message, Message)
    assert message.role == expected
    assert message.content == [TextBlock(text="hi")]


def test_a_role_content_dict_becomes_a_message_and_keeps_its_id() -> None:
    message = as_message({"role": "ai", "content": "hello", "id": "m-1"})
    assert (message.role, message.text(), message.message_id) == ("assistant", "hello", "m-1")
    assert as_message({"role": "user", "content": "x", "message_id": 7}).message_id == 7


def test_a_bare_text_is_a_user_message() -> None:
    assert [(m.role, m.text()) for m in as_messages("hi")] == [("user", "hi")]


def test_a_list_mixes_messages_pairs_and_dicts_in_order() -> None:
    kept = Message.text_message("third", role="assistant")
    messages = as_messages([("user", "first"), {"role": "system", "content": "second"}, kept])
    assert [(m.role, m.text()) for m in messages] == [
        ("user", "first"),
        ("system", "second"),
        ("assistant", "third"),
    ]
    assert messages[2] is kept


def test_one_pair_is_one_message_not_a_list_of_two() -> None:
    assert len(as_messages(("user", "hi"))) == 1


def test_a_list_content_may_mix_texts_and_blocks() -> None:
    message = as_message(("user", ["look:", {"type": "text", "text": "here"}]))
    assert message.content == [TextBlock(text="look:"), TextBlock(text="here")]


def test_a_serialized_message_dict_round_trips() -> None:
    original = Message.tool_message([ToolResultBlock(call_id="c1", output="sunny")])
    assert as_message(original.model_dump()) == original


def test_tool_calls_in_both_common_shapes_become_tool_call_blocks() -> None:
    message = as_message(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}},
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                },
            ],
        }
    )
    assert message.content == [
        ToolCallBlock(id="c1", name="get_weather", args={"city": "Paris"}),
        ToolCallBlock(id="c2", name="get_weather", args={"city": "Oslo"}),
    ]


def test_a_tool_dict_becomes_a_result_for_its_call() -> None:
    message = as_message({"role": "tool", "content": "sunny", "tool_call_id": "c1"})
    assert message.role == "tool"
    assert message.content == [ToolResultBlock(call_id="c1", output="sunny")]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (("tool", "sunny"), "a pair cannot say which"),
        ({"role": "tool", "content": "sunny"}, "needs 'tool_call_id'"),
        (("bot", "hi"), "unknown role 'bot'; expected one of 'user', 'human'"),
        ({"role": "user"}, "has no 'content'"),
        ({"content": "hi"}, "has no 'role'"),
        ({"role": "user", "content": "hi", "colour": "red"}, "unknown message key(s) 'colour'"),
        ({"role": "user", "content": 42}, "'content' must be a text or a list"),
        (("user", "a", "b"), "got tuple"),
        (42, "got int 42"),
        ({"role": "user", "content": "x", "tool_call_id": "c"}, "belongs on a tool message"),
        ({"role": "user", "content": "x", "tool_calls": [{"id": "c", "name": "f"}]}, "assistant"),
        (
            {"role": "ai", "content": "", "tool_calls": [{"function": {"name": "f"}}]},
            "tool_calls[0]: not a valid ToolCallBlock",
        ),
        (
            {
                "role": "ai",
                "content": "",
                "tool_calls": [{"id": "c", "function": {"arguments": "{"}}],
            },
            "'arguments' is not valid JSON",
        ),
        (("user", [{"type": "picture"}]), "not a valid message"),
    ],
)
def test_what_cannot_be_converted_fails_saying_what_and_where(value: Any, fragment: str) -> None:
    with pytest.raises(StateError) as raised:
        as_messages(["fine", value], "input")
    assert str(raised.value).startswith("input[1]")
    assert fragment in str(raised.value)


def test_add_messages_accepts_message_likes_on_the_right() -> None:
    first = Message.text_message("hi", message_id="a")
    merged = add_messages([first], [("ai", "hello"), {"role": "user", "content": "again"}])
    assert [(m.role, m.text()) for m in merged] == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "again"),
    ]
    assert all(isinstance(m, Message) for m in merged)
    assert add_messages([first], ("user", "one"))[1].text() == "one"
    assert add_messages([first], {"role": "user", "content": "hi", "id": "a"}) == [first]


def test_add_messages_names_the_bad_item() -> None:
    with pytest.raises(StateError, match=r"add_messages: right\[1\]: unknown role 'robot'"):
        add_messages([], [("user", "ok"), ("robot", "beep")])


def test_replace_messages_accepts_message_likes() -> None:
    replaced = replace_messages([Message.text_message("old")], [("system", "new")])
    assert [(m.role, m.text()) for m in replaced] == [("system", "new")]
