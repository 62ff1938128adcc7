"""Structured output through the public API: schemas, unions, strategies, retries (issue 17)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from tenxgraph.core.graph import Agent, StateGraph, create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest, ScriptedModel
from tenxgraph.core.state import AgentState, Message, ToolCallBlock
from tenxgraph.errors import ConfigError, GraphBuildError, OutputValidationError
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float


@dataclasses.dataclass
class Forecast:
    city: str
    days: list[str]


class Contact(TypedDict):
    name: str
    email: str


class Refusal(BaseModel):
    reason: str


CONTACT_SCHEMA: dict[str, Any] = {
    "title": "Contact",
    "description": "A person to write to.",
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "email": {"type": "string", "pattern": "@"},
        "tags": {"type": "array", "items": {"enum": ["work", "home"]}},
    },
    "required": ["name", "email"],
    "additionalProperties": False,
}


class ToolOnlyModel(FunctionModel):
    """A model without native structured output: ``auto`` must use the tool strategy."""

    def supports_output_schema(self, *, with_tools: bool) -> bool:
        return False


def ask(text: str = "q") -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> Message:
    return Message(role="assistant", content=[ToolCallBlock(id=call_id, name=name, args=args)])


# --- schema kinds (native strategy) ---------------------------------------------------


def test_a_pydantic_model_works_as_before() -> None:
    model = ScriptedModel(['{"city": "Oslo", "celsius": 4.5}'])
    result = create_agent(model, output_schema=Weather).invoke(ask())
    assert result["structured_response"] == Weather(city="Oslo", celsius=4.5)
    assert result["messages"][-1].parsed_content == Weather(city="Oslo", celsius=4.5)
    request = model.requests[0]
    assert request.output_schema == Weather.model_json_schema()
    assert request.output_schema_name == "Weather"
    assert request.tools == []


def test_a_dataclass_gives_an_instance_and_stores_its_data() -> None:
    model = ScriptedModel(['{"city": "Oslo", "days": ["sun", "rain"]}'])
    app = create_agent(model, output_schema=Forecast, checkpointer=InMemoryCheckpointer())
    result = app.invoke(ask(), {"thread_id": "t"})
    assert result["structured_response"] == Forecast(city="Oslo", days=["sun", "rain"])
    assert result["messages"][-1].parsed_content == {"city": "Oslo", "days": ["sun", "rain"]}
    assert model.requests[0].output_schema["properties"]["days"]["type"] == "array"
    saved = app.get_state({"thread_id": "t"})  # stored as data: it loads as a dict
    assert saved.structured_response == {"city": "Oslo", "days": ["sun", "rain"]}


def test_a_typeddict_gives_a_dict() -> None:
    model = ScriptedModel(['{"name": "Ada", "email": "ada@example.com"}'])
    result = create_agent(model, output_schema=Contact).invoke(ask())
    assert result["structured_response"] == {"name": "Ada", "email": "ada@example.com"}
    assert model.requests[0].output_schema_name == "Contact"


def test_a_json_schema_dict_is_validated_and_gives_a_dict() -> None:
    model = ScriptedModel(
        [
            '{"name": "", "email": "nobody", "tags": ["pets"], "age": 3}',
            '{"name": "Ada", "email": "ada@example.com", "tags": ["work"]}',
        ]
    )
    result = create_agent(model, output_schema=CONTACT_SCHEMA).invoke(ask())
    expected = {"name": "Ada", "email": "ada@example.com", "tags": ["work"]}
    assert result["structured_response"] == expected
    assert model.requests[0].output_schema == CONTACT_SCHEMA
    assert model.requests[0].output_schema_name == "Contact"
    correction = model.requests[1].messages[-1].text()
    for problem in (
        "name: 0 characters, at least 1 needed",
        "email: 'nobody' does not match the pattern '@'",
        "tags.0: 'pets' is not one of ['work', 'home']",
        "age: unexpected field",
    ):
        assert problem in correction


# --- unions ---------------------------------------------------------------------------


def test_a_union_is_sent_natively_as_an_object_with_one_answer_field() -> None:
    model = ScriptedModel(['{"answer": {"reason": "no city given"}}'])
    result = create_agent(model, output_schema=Weather | Refusal).invoke(ask())
    assert result["structured_response"] == Refusal(reason="no city given")
    schema = model.requests[0].output_schema
    assert schema["required"] == ["answer"]
    branches = schema["properties"]["answer"]["anyOf"]
    assert [branch["title"] for branch in branches] == ["Weather", "Refusal"]
    assert model.requests[0].output_schema_name == "Weather_or_Refusal"


def test_the_closest_member_of_a_union_wins() -> None:
    class Point(BaseModel):
        x: int

    class Point3(BaseModel):
        x: int
        z: int

    model = ScriptedModel(['{"answer": {"x": 1, "z": 2}}'])
    result = create_agent(model, output_schema=[Point, Point3]).invoke(ask())
    assert result["structured_response"] == Point3(x=1, z=2)


def test_a_union_can_mix_kinds_in_a_list() -> None:
    model = ScriptedModel(['{"answer": {"name": "Ada", "email": "ada@example.com"}}'])
    result = create_agent(model, output_schema=[Weather, CONTACT_SCHEMA]).invoke(ask())
    assert result["structured_response"] == {"name": "Ada", "email": "ada@example.com"}


def test_a_union_answer_matching_no_member_names_each_members_problems() -> None:
    model = ScriptedModel(['{"answer": {"city": "Oslo"}}'])
    app = create_agent(model, output_schema=Weather | Refusal, output_retries=0)
    with pytest.raises(OutputValidationError) as caught:
        app.invoke(ask())
    message = str(caught.value)
    assert "failed once" in message
    assert "as Weather: celsius: Field required" in message
    assert "as Refusal: reason: Field required" in message


# --- schemas checked when the agent is built ------------------------------------------


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (int, "must be a pydantic model, a dataclass, a TypedDict"),
        (Weather | None, "got None"),
        ("Weather", "got 'Weather'"),
        ([], "an empty list is no schema"),
        ({"type": "array", "items": {"type": "string"}}, "must describe an object"),
        ({"type": "object", "properties": {"a": {"type": "str"}}}, "properties.a.type: unknown"),
        ({"type": "object", "properties": {"a": {}}, "required": ["b"]}, "required: 'b'"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/X"}}}, "points at nothing"),
        ({"type": "object", "properties": {"a": {"pattern": "("}}}, "not a regular expression"),
        ({"type": "object", "properties": {"a": {"enum": []}}}, "properties.a.enum"),
        ({"type": "object", "properties": {"a": {"minimum": float("nan")}}}, "not a JSON number"),
        ({"type": "object", "properties": []}, "properties: expected a dict"),
        ([{"type": "object"}, {"type": "object"}], "distinct names"),
    ],
)
def test_an_unusable_schema_is_a_build_error_naming_the_problem(schema: Any, problem: str) -> None:
    with pytest.raises(GraphBuildError, match="output_schema") as caught:
        Agent(ScriptedModel([]), output_schema=schema)
    assert problem in str(caught.value)


def test_a_model_no_json_schema_can_describe_is_a_build_error() -> None:
    class Opaque:
        pass

    class Bad(BaseModel):
        model_config = {"arbitrary_types_allowed": True}
        thing: Opaque

    with pytest.raises(GraphBuildError, match="output_schema Bad: no JSON schema"):
        create_agent(ScriptedModel([]), output_schema=Bad)


def test_a_tool_named_like_an_output_schema_is_refused() -> None:
    def Weather(city: str) -> str:
        """A tool with a schema's name."""
        return city

    with pytest.raises(GraphBuildError, match="tool 'Weather' has the name of an output_schema"):
        create_agent(ScriptedModel([]), [Weather], output_schema=globals()["Weather"])


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"output_strategy": "json"}, "output_strategy must be one of"),
        ({"output_retries": -1}, "output_retries must be an integer >= 0"),
        ({"output_retries": True}, "output_retries must be an integer >= 0"),
    ],
)
def test_bad_output_options_are_config_errors(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        Agent(ScriptedModel([]), output_schema=Weather, **options)


# --- retries --------------------------------------------------------------------------


def test_retries_send_every_failed_answer_and_record_only_the_good_one() -> None:
    model = ScriptedModel(
        ["not json", '{"city": "Oslo"}', '{"city": "Oslo", "celsius": 1}'],
    )
    app = create_agent(model, output_schema=Weather, output_retries=2)
    result = app.invoke(ask("weather?"))
    assert result["structured_response"] == Weather(city="Oslo", celsius=1)
    assert [m.role for m in result["messages"]] == ["assistant"]  # the failed ones are not kept
    last = model.requests[2].messages
    assert [m.role for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert "the answer is not valid JSON" in last[2].text()
    assert "celsius: Field required" in last[4].text()
    model.assert_consumed()


def test_retry_exhaustion_raises_output_validation_error() -> None:
    model = ScriptedModel(["{}", "{}", "{}"])
    app = create_agent(model, output_schema=Weather, output_retries=2)
    with pytest.raises(OutputValidationError, match="Weather failed 3 times: city: Field required"):
        app.invoke(ask())
    model.assert_consumed()


def test_no_retries_raise_at_the_first_bad_answer() -> None:
    model = ScriptedModel(["{}"])
    with pytest.raises(OutputValidationError, match="failed once"):
        create_agent(model, output_schema=Weather, output_retries=0).invoke(ask())
    model.assert_consumed()


# --- tool strategy ----------------------------------------------------------------------


def test_the_tool_strategy_offers_the_schema_as_a_forced_tool() -> None:
    model = ScriptedModel([call("Weather", {"city": "Oslo", "celsius": 3})])
    app = create_agent(model, output_schema=Weather, output_strategy="tool")
    result = app.invoke(ask())
    assert result["structured_response"] == Weather(city="Oslo", celsius=3)
    request = model.requests[0]
    assert request.output_schema is None
    assert [(t.name, t.description) for t in request.tools] == [
        ("Weather", "The weather in a city.")
    ]
    assert request.tools[0].parameters == Weather.model_json_schema()
    assert request.tool_choice == "Weather"


def test_an_answer_through_the_output_tool_is_recorded_as_json_text() -> None:
    # the output call is not run and leaves no unanswered call: later turns replay cleanly
    replies = [
        call("Weather", {"city": "Oslo", "celsius": 3}, "out1"),
        call("Weather", {"city": "Rome", "celsius": 20}, "out2"),
    ]
    model = ToolOnlyModel(lambda request: replies.pop(0))
    app = create_agent(model, output_schema=Weather, checkpointer=InMemoryCheckpointer())
    config = {"thread_id": "t"}
    first = app.invoke(ask("Oslo?"), config)
    answer = first["messages"][-1]
    assert answer.tool_calls() == []
    assert json.loads(answer.text()) == {"city": "Oslo", "celsius": 3}
    assert answer.metadata["output_tool_call"] == {"id": "out1", "name": "Weather"}
    assert model.requests[0].tool_choice == "Weather"
    second = app.invoke(ask("Rome?"), config)
    assert second["structured_response"] == Weather(city="Rome", celsius=20)
    history = model.requests[1].messages
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert all(not m.tool_calls() for m in history)


def test_auto_uses_tools_for_a_model_without_native_output_and_tools_run_first() -> None:
    ran: list[str] = []

    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        ran.append(city)
        return 4.5

    def reply(request: ModelRequest) -> Message:
        if not any(m.tool_results() for m in request.messages):
            return call("thermometer", {"city": "Oslo"}, "t1")
        return call("Weather", {"city": "Oslo", "celsius": 4.5}, "out")

    model = ToolOnlyModel(reply)
    result = create_agent(model, [thermometer], output_schema=Weather).invoke(ask())
    assert ran == ["Oslo"]
    assert [m.role for m in result["messages"]] == ["assistant", "tool", "assistant"]
    assert result["structured_response"] == Weather(city="Oslo", celsius=4.5)
    assert all(r.tool_choice == "required" for r in model.requests)
    assert all([t.name for t in r.tools] == ["thermometer", "Weather"] for r in model.requests)
    assert all(r.output_schema is None for r in model.requests)


def test_an_output_call_next_to_a_tool_call_is_dropped_and_asked_for_again() -> None:
    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        return 4.5

    both = Message(
        role="assistant",
        content=[
            ToolCallBlock(id="t1", name="thermometer", args={"city": "Oslo"}),
            ToolCallBlock(id="early", name="Weather", args={"city": "Oslo", "celsius": 0}),
        ],
    )
    model = ScriptedModel([both, call("Weather", {"city": "Oslo", "celsius": 4.5}, "out")])
    app = create_agent(model, [thermometer], output_schema=Weather, output_strategy="tool")
    result = app.invoke(ask())
    first = result["messages"][0]
    assert [c.id for c in first.tool_calls()] == ["t1"]
    assert result["structured_response"] == Weather(city="Oslo", celsius=4.5)
    model.assert_consumed()


def test_a_union_in_the_tool_strategy_is_one_tool_per_schema() -> None:
    model = ScriptedModel([call("Refusal", {"reason": "no city"})])
    app = create_agent(model, output_schema=Weather | Refusal, output_strategy="tool")
    result = app.invoke(ask())
    assert result["structured_response"] == Refusal(reason="no city")
    assert [t.name for t in model.requests[0].tools] == ["Weather", "Refusal"]
    assert model.requests[0].tool_choice == "required"


def test_a_bad_output_call_is_answered_with_the_error_and_retried() -> None:
    model = ScriptedModel(
        [
            call("Weather", {"city": "Oslo"}, "bad"),
            call("Weather", {"city": "Oslo", "celsius": 2}, "ok"),
        ]
    )
    app = create_agent(model, output_schema=Weather, output_strategy="tool")
    result = app.invoke(ask())
    assert result["structured_response"] == Weather(city="Oslo", celsius=2)
    retry = model.requests[1].messages
    assert [m.role for m in retry] == ["user", "assistant", "tool"]
    (error,) = retry[-1].tool_results()
    assert error.call_id == "bad"
    assert error.is_error
    assert "celsius: Field required" in str(error.output)
    assert [m.role for m in result["messages"]] == ["assistant"]


def test_two_output_calls_at_once_are_both_answered_and_retried() -> None:
    two = Message(
        role="assistant",
        content=[
            ToolCallBlock(id="a", name="Weather", args={"city": "Oslo", "celsius": 1}),
            ToolCallBlock(id="b", name="Refusal", args={"reason": "unsure"}),
        ],
    )
    model = ScriptedModel([two, call("Refusal", {"reason": "unsure"}, "c")])
    app = create_agent(model, output_schema=[Weather, Refusal], output_strategy="tool")
    result = app.invoke(ask())
    assert result["structured_response"] == Refusal(reason="unsure")
    errors = [r for m in model.requests[1].messages for r in m.tool_results()]
    assert [r.call_id for r in errors] == ["a", "b"]
    assert all("give one final answer" in str(r.output) for r in errors)


def test_output_arguments_that_are_not_json_are_sent_back() -> None:
    refused = Message(
        role="assistant",
        content=[ToolCallBlock(id="cut", name="Weather", args={})],
        metadata={"invalid_tool_args": {"cut": {"arguments": '{"city": "Os', "error": "cut off"}}},
    )
    model = ScriptedModel([refused, call("Weather", {"city": "Oslo", "celsius": 2})])
    app = create_agent(model, output_schema=Weather, output_strategy="tool")
    assert app.invoke(ask())["structured_response"] == Weather(city="Oslo", celsius=2)
    (error,) = model.requests[1].messages[-1].tool_results()
    assert "cut off" in str(error.output)


def test_a_plain_json_answer_is_accepted_in_the_tool_strategy() -> None:
    model = ScriptedModel(['```json\n{"city": "Oslo", "celsius": 2}\n```'])
    app = create_agent(model, output_schema=Weather, output_strategy="tool")
    assert app.invoke(ask())["structured_response"] == Weather(city="Oslo", celsius=2)


def test_a_text_answer_in_the_tool_strategy_is_asked_to_call_the_tool() -> None:
    model = ScriptedModel(["It is sunny.", call("Weather", {"city": "Oslo", "celsius": 2})])
    app = create_agent(model, output_schema=Weather, output_strategy="tool")
    assert app.invoke(ask())["structured_response"] == Weather(city="Oslo", celsius=2)
    assert "calling the tool Weather" in model.requests[1].messages[-1].text()


def test_tool_choice_none_leaves_only_the_output_tool() -> None:
    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        return 4.5

    model = ScriptedModel([call("Weather", {"city": "Oslo", "celsius": 2})])
    app = create_agent(
        model, [thermometer], output_schema=Weather, output_strategy="tool", tool_choice="none"
    )
    app.invoke(ask())
    assert [t.name for t in model.requests[0].tools] == ["Weather"]
    assert model.requests[0].tool_choice == "Weather"


def test_a_forced_tool_goes_first_in_the_tool_strategy() -> None:
    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        return 4.5

    model = ScriptedModel(
        [
            call("thermometer", {"city": "Oslo"}, "t1"),
            call("Weather", {"city": "Oslo", "celsius": 4.5}),
        ]
    )
    app = create_agent(
        model,
        [thermometer],
        output_schema=Weather,
        output_strategy="tool",
        tool_choice="thermometer",
    )
    app.invoke(ask())
    assert [r.tool_choice for r in model.requests] == ["thermometer", "required"]


def test_a_required_tool_choice_is_obeyed_before_the_output_tools_are_offered() -> None:
    def thermometer(city: str) -> float:
        """Read the temperature in a city."""
        return 4.5

    model = ScriptedModel(
        [
            call("thermometer", {"city": "Oslo"}, "t1"),
            call("Weather", {"city": "Oslo", "celsius": 4.5}),
        ]
    )
    app = create_agent(
        model, [thermometer], output_schema=Weather, output_strategy="tool", tool_choice="required"
    )
    assert app.invoke(ask())["structured_response"] == Weather(city="Oslo", celsius=4.5)
    assert [[t.name for t in r.tools] for r in model.requests] == [
        ["thermometer"],
        ["thermometer", "Weather"],
    ]
    assert [r.tool_choice for r in model.requests] == ["required", "required"]


def test_native_strategy_is_used_even_when_the_model_says_it_cannot() -> None:
    model = ToolOnlyModel(lambda request: '{"city": "Oslo", "celsius": 2}')
    app = create_agent(model, output_schema=Weather, output_strategy="native")
    assert app.invoke(ask())["structured_response"] == Weather(city="Oslo", celsius=2)
    assert model.requests[0].output_schema == Weather.model_json_schema()


def test_an_agent_node_in_a_hand_built_graph_takes_the_options() -> None:
    model = ScriptedModel([call("Contact", {"name": "Ada", "email": "a@b"})])
    graph = StateGraph(AgentState)
    graph.add_node("main", Agent(model, output_schema=Contact, output_strategy="tool"))
    graph.set_entry_point("main")
    result = graph.compile().invoke(ask())
    assert result["structured_response"] == {"name": "Ada", "email": "a@b"}


# --- JSON-schema dicts: what is enforced -----------------------------------------------------

LINK = {"type": "object", "properties": {"next": {"$ref": "#/$defs/Link"}}}


@pytest.mark.parametrize(
    ("properties", "answer", "problem"),
    [
        ({"n": {"type": "integer"}}, {"n": 2.0}, None),
        ({"n": {"type": "integer"}}, {"n": True}, "n: expected integer, got a boolean"),
        ({"n": {"type": "number", "minimum": 0}}, {"n": -1}, "n: -1 is not >= 0"),
        ({"n": {"type": "number", "exclusiveMaximum": 5}}, {"n": 5}, "n: 5 is not < 5"),
        ({"n": {"type": ["string", "null"]}}, {"n": None}, None),
        ({"n": {"type": ["string", "null"]}}, {"n": 1}, "expected string or null"),
        ({"n": {"const": 1}}, {"n": True}, "n: expected 1, got True"),
        ({"n": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}, {"n": []}, "0 of the 2"),
        ({"n": {"oneOf": [{"type": "number"}, {"type": "integer"}]}}, {"n": 3}, "2 of the 2"),
        ({"n": {"type": "array", "maxItems": 1}}, {"n": [1, 2]}, "n: 2 items, at most 1"),
        ({"n": {"$ref": "#/$defs/Link"}}, {"n": {"next": {"next": 3}}}, "n.next.next: expected"),
        ({"n": {"additionalProperties": {"type": "integer"}}}, {"n": {"a": "x"}}, "n.a: expected"),
    ],
)
def test_a_json_schema_dict_enforces_its_keywords(
    properties: dict[str, Any], answer: dict[str, Any], problem: str | None
) -> None:
    schema = {"title": "S", "type": "object", "properties": properties, "$defs": {"Link": LINK}}
    app = create_agent(ScriptedModel([json.dumps(answer)]), output_schema=schema, output_retries=0)
    if problem is None:
        assert app.invoke(ask())["structured_response"] == answer
        return
    with pytest.raises(OutputValidationError) as caught:
        app.invoke(ask())
    assert problem in str(caught.value)
