"""JSON-data fields are checked in pydantic-core for JSON input, in Python for Python input.

JSON input can only be wrong by NaN or an infinity (the parser refuses lone
surrogates and deep nesting, and yields nothing but JSON types), so loading a
stored message checks its data without a Python call, while Python input keeps
the checks that name the exact place (``metadata['a'][1]``). The declared
types' JSON schema and dumps are unchanged.
"""

from __future__ import annotations

import json
import warnings
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError, ValidationInfo

from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import (
    ErrorBlock,
    FiniteJson,
    JsonChecked,
    MediaRef,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

NOT_FINITE = ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"]
"""What pydantic's JSON parser turns into a float JSON cannot hold."""

WHERE = [
    (Message, {"role": "user", "content": [], "metadata": {"a": [1, "@"]}}, ("metadata", "a")),
    (Message, {"role": "user", "content": [], "raw": {"a": {"b": "@"}}}, ("raw", "a")),
    (
        Message,
        {"role": "user", "content": [], "tools_calls": [{"x": "@"}]},
        ("tools_calls", 0, "x"),
    ),
    (
        Message,
        {"role": "user", "content": [], "parsed_content": {"x": "@"}},
        ("parsed_content", "x"),
    ),
    (ToolCallBlock, {"id": "c", "name": "f", "args": {"n": "@"}}, ("args", "n")),
    (RemoteToolCallBlock, {"id": "c", "name": "f", "args": {"n": "@"}}, ("args", "n")),
    (ErrorBlock, {"message": "m", "data": {"n": ["@"]}}, ("data", "n")),
    (ToolResultBlock, {"call_id": "c", "output": {"n": "@"}}, ("output",)),
    (ToolResultBlock, {"call_id": "c", "output": "@"}, ("output",)),
]


@pytest.mark.parametrize("literal", NOT_FINITE)
@pytest.mark.parametrize(("model", "payload", "loc"), WHERE)
def test_a_non_finite_number_in_json_input_is_one_error_at_the_field(
    model: type[BaseModel], payload: dict[str, Any], loc: tuple[Any, ...], literal: str
) -> None:
    text = json.dumps(payload).replace('"@"', literal)
    with pytest.raises(ValidationError) as caught:
        model.model_validate_json(text)
    errors = caught.value.errors()
    assert len(errors) == 1
    assert errors[0]["loc"][: len(loc)] == loc
    assert errors[0]["type"] == "finite_json"
    assert "NaN or infinity" in errors[0]["msg"]


@pytest.mark.parametrize(("model", "payload", "loc"), WHERE)
def test_the_same_fields_take_finite_json_data_of_every_type(
    model: type[BaseModel], payload: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    data = [1, -0.0, 2.5, 1.0, True, False, None, "é\U0001f600", 10**30, {"k": [{}]}, []]
    text = json.dumps(payload).replace('"@"', json.dumps(data))
    field = loc[0]
    loaded = getattr(model.model_validate_json(text), field)
    assert loaded == getattr(model.model_validate(json.loads(text)), field)
    assert loaded == json.loads(text)[field]


def test_values_keep_their_json_types() -> None:
    """No coercion between int, float and bool: 1 stays int, 1.0 float, true bool."""
    text = '{"role": "user", "content": [], "metadata": {"v": [1, 1.0, true, 0, 0.0, false]}}'
    values = Message.model_validate_json(text).metadata["v"]
    assert [type(value) for value in values] == [int, float, bool, int, float, bool]
    assert values == [1, 1.0, True, 0, 0.0, False]


def test_python_input_keeps_the_check_that_names_the_place() -> None:
    with pytest.raises(ValidationError, match=r"metadata\['a'\]\[1\] is nan"):
        Message(role="user", content=[], metadata={"a": [1, float("nan")]})


def test_json_input_makes_no_python_call_and_python_input_does() -> None:
    calls: list[str] = []

    def check(value: Any, info: ValidationInfo) -> Any:
        calls.append(str(info.field_name))
        return value

    class Holder(BaseModel):
        data: Annotated[dict[str, Any], JsonChecked(dict[str, FiniteJson], check=check)]

    Holder.model_validate_json('{"data": {"a": [1, 2.5, {"b": null}]}}')
    assert calls == []
    Holder(data={"a": 1})
    assert calls == ["data"]


def test_a_tool_output_from_json_keeps_its_kind() -> None:
    """Blocks stay blocks, a media reference a MediaRef, other data plain JSON."""
    blocks = ToolResultBlock.model_validate_json(
        '{"call_id": "c", "output": [{"type": "text", "text": "x"}]}'
    )
    assert blocks.output == [TextBlock(text="x")]
    media = ToolResultBlock.model_validate_json(
        '{"call_id": "c", "output": {"kind": "url", "url": "https://x/y"}}'
    )
    assert media.output == MediaRef(kind="url", url="https://x/y")
    for data in ({"n": 1, "s": "x"}, [1, "a"], "text", 3, None):
        loaded = ToolResultBlock.model_validate_json(json.dumps({"call_id": "c", "output": data}))
        assert loaded.output == data


def test_the_json_schema_and_dumps_are_the_declared_types() -> None:
    schema = Message.model_json_schema()["properties"]
    assert schema["metadata"] == {
        "additionalProperties": True,
        "title": "Metadata",
        "type": "object",
    }
    message = Message(role="user", content=[], metadata={"pair": (1, 2)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert json.loads(message.model_dump_json())["metadata"] == {"pair": [1, 2]}
        assert message.model_dump()["metadata"] == {"pair": (1, 2)}


class Answer(BaseModel):
    score: int = 0
    label: str


def test_a_structured_output_model_dumps_its_own_fields() -> None:
    message = Message(role="assistant", content=[], parsed_content=Answer(label="ok"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dumped = json.loads(message.model_dump_json())
    assert dumped["parsed_content"] == {"score": 0, "label": "ok"}
    assert message.model_dump(mode="json")["parsed_content"] == {"score": 0, "label": "ok"}
