"""Messages refuse what could not be sent or stored: unknown keys, NaN/inf, lone surrogates."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tenxgraph.core.state import Message, MessagesAdapter
from tenxgraph.core.state.message_block import (
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.tool_arguments import parse_tool_arguments
from tenxgraph.errors import TenxGraphError
from tests.core.state.test_roundtrip import every_block_kind

# --- unknown keys -----------------------------------------------------------------------------


def test_a_misspelt_message_key_is_an_error_naming_it() -> None:
    with pytest.raises(ValidationError) as caught:
        Message.model_validate({"role": "user", "contnet": [{"type": "text", "text": "hi"}]})
    locations = {error["loc"]: error["type"] for error in caught.value.errors()}
    assert locations[("contnet",)] == "extra_forbidden"


def test_unknown_keys_in_blocks_and_usage_are_errors_naming_them() -> None:
    with pytest.raises(ValidationError, match="txet"):
        Message.model_validate({"role": "user", "content": [{"type": "text", "txet": "hi"}]})
    with pytest.raises(ValidationError, match="prompt_tokenz"):
        Message.model_validate(
            {
                "role": "assistant",
                "content": [],
                "usages": {"completion_tokens": 1, "prompt_tokenz": 2, "total_tokens": 3},
            }
        )


def test_messages_written_by_the_current_code_load_again() -> None:
    messages = every_block_kind()
    assert MessagesAdapter.validate_json(MessagesAdapter.dump_json(messages)) == messages
    for message in messages:  # one row per message, as the checkpointers store them
        assert Message.model_validate_json(message.model_dump_json()) == message
        assert Message.model_validate(message.model_dump(mode="json")).model_dump() == (
            message.model_dump()
        )


# --- lone surrogates --------------------------------------------------------------------------


def test_a_lone_surrogate_in_user_text_is_refused_when_the_message_is_made() -> None:
    with pytest.raises(ValidationError) as caught:
        Message.text_message("abc\ud800def")
    [error] = caught.value.errors()
    assert error["loc"] == ("text",)
    assert "lone surrogate '\\ud800' at index 3" in error["msg"]


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (
            lambda s: Message(role="user", content=[], metadata={"note": ["ok", s]}),
            "metadata['note'][1]",
        ),
        (lambda s: Message(role="user", content=[], metadata={s: 1}), "metadata key"),
        (lambda s: Message(role="user", content=[], message_id=s), "message_id"),
        (lambda s: ToolCallBlock(id="c", name="f", args={"path": s}), "args['path']"),
        (lambda s: ToolResultBlock(call_id="c", output=s), "output"),
        (lambda s: ToolResultBlock(call_id="c", output={"a": s}), "output['a']"),
        (lambda s: ReasoningBlock(summary="x", details=["a", s]), "details"),
        (lambda s: ImageBlock(media=MediaRef(kind="url", url=s)), "url"),
        (lambda s: ErrorBlock(message="x", data={"k": s}), "data['k']"),
    ],
)
def test_lone_surrogates_are_refused_anywhere_naming_where(make: Any, where: str) -> None:
    with pytest.raises(ValidationError) as caught:
        make("x\udfff")
    assert where in str(caught.value)
    assert "lone surrogate" in str(caught.value)


def test_text_outside_the_basic_plane_is_fine_in_python_and_in_json() -> None:
    message = Message.text_message("emoji \U0001f600 and \u00e9")
    assert Message.model_validate_json(message.model_dump_json()) == message
    escaped = '{"role": "user", "content": [{"type": "text", "text": "\\ud83d\\ude00"}]}'
    assert Message.model_validate_json(escaped).text() == "\U0001f600"


def test_a_lone_surrogate_escape_in_json_input_is_refused() -> None:
    with pytest.raises(ValidationError):
        Message.model_validate_json(
            '{"role": "user", "content": [{"type": "text", "text": "\\ud800"}]}'
        )


# --- NaN and infinities ---------------------------------------------------------------------


class Scored(BaseModel):
    score: float


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    ("make", "where"),
    [
        (lambda v: Message(role="user", content=[], metadata={"a": [1, v]}), "metadata['a'][1]"),
        (lambda v: Message(role="user", content=[], raw={"x": v}), "raw['x']"),
        (lambda v: Message(role="user", content=[], tools_calls=[{"x": v}]), "tools_calls[0]['x']"),
        (
            lambda v: Message(role="user", content=[], parsed_content={"x": v}),
            "parsed_content['x']",
        ),
        (
            lambda v: Message(role="user", content=[], parsed_content=Scored(score=v)),
            "parsed_content['score']",
        ),
        (lambda v: Message(role="user", content=[], timestamp=v), "timestamp"),
        (lambda v: ToolCallBlock(id="c", name="f", args={"n": v}), "args['n']"),
        (lambda v: ToolResultBlock(call_id="c", output={"n": v}), "output"),
        (lambda v: ToolResultBlock(call_id="c", output=v), "output"),
        (lambda v: ErrorBlock(message="x", data={"n": v}), "data['n']"),
        (lambda v: ImageBlock(media=MediaRef(kind="url", url="u"), bbox=[0.0, v]), "bbox"),
    ],
)
def test_nan_and_infinity_are_refused_naming_where(make: Any, where: str, bad: float) -> None:
    with pytest.raises(ValidationError) as caught:
        make(bad)
    assert where in str(caught.value)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_json_input_is_refused_too(literal: str) -> None:
    base = {"role": "tool", "content": [{"type": "tool_result", "call_id": "c", "output": 0}]}
    for path in ("metadata", "output"):
        payload = json.dumps(base).replace('"output": 0', f'"output": {literal}')
        if path == "metadata":
            payload = json.dumps({**base, "metadata": {"x": 0}}).replace(
                '"x": 0', f'"x": {literal}'
            )
        with pytest.raises(ValidationError):
            Message.model_validate_json(payload)


# --- tool-call arguments ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "args", "error"),
    [
        ("", {}, None),
        (None, {}, None),
        ('{"a": 1}', {"a": 1}, None),
        ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, None),
        ('{"pattern": "tmp/*.lo', {}, "the arguments are not valid JSON (Unterminated string"),
        ("[1, 2]", {}, "the arguments are an array, not a JSON object"),
        ('"x"', {}, "the arguments are a string, not a JSON object"),
        ("3", {}, "the arguments are a number, not a JSON object"),
        ("null", {}, "the arguments are NoneType, not a JSON object"),
        ('{"a": NaN}', {}, "NaN is not a JSON number"),
        ('{"a": "\\ud800"}', {}, "lone surrogate"),
        ({"a": math.inf}, {}, "the arguments['a'] is inf"),
        ([1, 2], {}, "the arguments are an array"),
        ("[" * 5000 + "]" * 5000, {}, "the arguments are not valid JSON (nested too deeply)"),
    ],
)
def test_parse_tool_arguments(raw: object, args: dict[str, Any], error: str | None) -> None:
    parsed = parse_tool_arguments(raw)
    assert parsed.args == args
    if error is None:
        assert parsed.error is None
    else:
        assert parsed.error is not None
        assert parsed.error.startswith(error) or error in parsed.error


def test_arguments_of_a_call_cut_off_mid_stream_are_refused_even_if_they_parse() -> None:
    parsed = parse_tool_arguments({"pattern": "tmp/*.lo"}, complete=False)
    assert parsed.args == {}
    assert parsed.error == "the call was cut off before its arguments were complete"
    assert parsed.raw == '{"pattern": "tmp/*.lo"}'


# --- fuzzing --------------------------------------------------------------------------------

# Any text, lone surrogates included; floats with NaN and infinities.
texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=25,
)
block_types = st.sampled_from(
    ["text", "image", "tool_call", "tool_result", "reasoning", "error", "data", "document"]
)
blockish = st.dictionaries(
    st.sampled_from(
        [
            "text",
            "id",
            "name",
            "call_id",
            "output",
            "args",
            "summary",
            "details",
            "message",
            "data",
            "mime_type",
            "media",
            "annotations",
            "is_error",
            "status",
            "bbox",
            "bogus",
        ]
    ),
    json_values,
    max_size=5,
).flatmap(lambda d: st.builds(lambda t: {**d, "type": t}, block_types))
messageish = st.dictionaries(
    st.sampled_from(
        [
            "role",
            "message_id",
            "metadata",
            "delta",
            "timestamp",
            "raw",
            "tools_calls",
            "reasoning",
            "parsed_content",
            "usages",
            "contnet",
        ]
    ),
    json_values,
    max_size=6,
).flatmap(
    lambda d: st.builds(
        lambda role, content: {**d, "role": role, "content": content},
        st.sampled_from(["user", "assistant", "tool"]) | json_values,
        st.lists(blockish, max_size=3) | json_values,
    )
)
deep = st.integers(min_value=1, max_value=900).map(
    lambda n: {
        "role": "user",
        "content": [],
        "metadata": {"x": [[]] if n < 2 else json.loads("[" * n + "]" * n)},
    }
)


def _only_library_errors(call: Any) -> Any:
    try:
        return call()
    except (ValidationError, TenxGraphError):
        return None


@settings(max_examples=400, deadline=None)
@given(st.one_of(messageish, json_values, deep))
def test_fuzzed_input_gives_only_validation_or_library_errors(payload: Any) -> None:
    message = _only_library_errors(lambda: Message.model_validate(payload))
    if message is None:
        return
    dumped = message.model_dump_json()  # no UnicodeEncodeError, no NaN turned into null
    assert Message.model_validate_json(dumped) == message
    assert json.loads(dumped) == message.model_dump(mode="json")


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, st.text(max_size=40), json_values))
def test_fuzzed_tool_arguments_never_raise(raw: Any) -> None:
    parsed = parse_tool_arguments(raw)
    if parsed.error is None:
        ToolCallBlock(id="c", name="f", args=parsed.args)  # always a valid block
        json.dumps(parsed.args, allow_nan=False).encode()


def test_data_nested_deeper_than_a_stored_message_could_be_loaded_is_refused() -> None:
    deep: Any = "leaf"
    for _ in range(150):
        deep = [deep]
    with pytest.raises(ValidationError, match="nested more than 100 levels deep"):
        Message(role="user", content=[], metadata={"x": deep})
    shallow: Any = "leaf"
    for _ in range(90):
        shallow = {"k": shallow}
    message = Message(role="user", content=[], metadata={"x": shallow})
    assert Message.model_validate_json(message.model_dump_json()) == message
