"""Structured output WITH tools, through the official SDKs against the replay server (issue 17).

For OpenAI, Anthropic and Gemini: an agent with a tool and an ``output_schema``
runs the tool first, then gives the structured answer, natively where the
model has it and through the output tool where it does not; a later turn on
the same thread sends the recorded answer back as plain assistant text.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm.anthropic import AnthropicModel
from tenxgraph.core.llm.google import GoogleModel
from tenxgraph.core.llm.openai import OpenAIChatModel
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.testing.replay import ReplayServer, chat_chunk


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float


class Refusal(BaseModel):
    reason: str


def thermometer(city: str) -> float:
    """Read the temperature in a city."""
    return 4.5


ANSWER = {"city": "Oslo", "celsius": 4.5}
CONFIG = {"thread_id": "weather"}


def ask(text: str) -> dict[str, Any]:
    return {"messages": [Message.text_message(text)]}


def body(server: ReplayServer, index: int) -> Any:
    return server.requests[index].body


# --- OpenAI Chat Completions ------------------------------------------------------------


@pytest.fixture
async def gpt(server: ReplayServer) -> AsyncIterator[OpenAIChatModel]:
    model = OpenAIChatModel("gpt-test", base_url=server.url + "/v1", api_key="sk", max_retries=0)
    yield model
    await model.aclose()


def openai_call(call_id: str, name: str, args: dict[str, Any]) -> list[Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": call_id, "function": function}]}
    return [chat_chunk(delta), chat_chunk({}, "tool_calls"), "[DONE]"]


def openai_text(text: str) -> list[Any]:
    return [chat_chunk({"role": "assistant", "content": text}), chat_chunk({}, "stop"), "[DONE]"]


async def test_openai_native_json_schema_with_a_tool(
    server: ReplayServer, gpt: OpenAIChatModel
) -> None:
    server.stream(openai_call("call_1", "thermometer", {"city": "Oslo"}))
    server.stream(openai_text(json.dumps(ANSWER)))
    app = create_agent(gpt, [thermometer], output_schema=Weather)

    result = await app.ainvoke(ask("Weather in Oslo?"))

    assert result["structured_response"] == Weather(**ANSWER)
    assert [m.role for m in result["messages"]] == ["assistant", "tool", "assistant"]
    for index in (0, 1):
        sent = body(server, index)
        assert sent["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "Weather", "schema": Weather.model_json_schema()},
        }
        assert [t["function"]["name"] for t in sent["tools"]] == ["thermometer"]
        assert sent["tool_choice"] == "auto"
    assert [m["role"] for m in body(server, 1)["messages"]] == ["user", "assistant", "tool"]


async def test_openai_native_union_is_one_object_with_an_answer_field(
    server: ReplayServer, gpt: OpenAIChatModel
) -> None:
    server.stream(openai_text('{"answer": {"reason": "which city?"}}'))
    app = create_agent(gpt, [thermometer], output_schema=Weather | Refusal)

    result = await app.ainvoke(ask("Weather?"))

    assert result["structured_response"] == Refusal(reason="which city?")
    schema = body(server, 0)["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "object"
    assert [b["title"] for b in schema["properties"]["answer"]["anyOf"]] == ["Weather", "Refusal"]


async def test_openai_tool_strategy_with_a_tool_and_the_next_turn(
    server: ReplayServer, gpt: OpenAIChatModel
) -> None:
    server.stream(openai_call("call_1", "thermometer", {"city": "Oslo"}))
    server.stream(openai_call("call_2", "Weather", ANSWER))
    server.stream(openai_call("call_3", "Weather", {"city": "Rome", "celsius": 20}))
    app = create_agent(
        gpt,
        [thermometer],
        output_schema=Weather,
        output_strategy="tool",
        checkpointer=InMemoryCheckpointer(),
    )

    first = await app.ainvoke(ask("Weather in Oslo?"), CONFIG)
    second = await app.ainvoke(ask("And Rome? Guess."), CONFIG)

    assert first["structured_response"] == Weather(**ANSWER)
    assert second["structured_response"] == Weather(city="Rome", celsius=20)
    sent = body(server, 0)
    assert "response_format" not in sent
    assert [t["function"]["name"] for t in sent["tools"]] == ["thermometer", "Weather"]
    assert sent["tool_choice"] == "required"
    history = body(server, 2)["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "user"]
    assert json.loads(history[3]["content"]) == ANSWER  # the output call, as plain text
    assert "tool_calls" not in history[3]


# --- Anthropic Messages ------------------------------------------------------------------


@pytest.fixture
async def claude_models(server: ReplayServer) -> AsyncIterator[dict[str, AnthropicModel]]:
    made = {
        name: AnthropicModel(name, api_key="test", base_url=server.url, max_retries=0)
        for name in ("claude-opus-4-7", "claude-3-5-haiku-latest")
    }
    yield made
    for model in made.values():
        await model.aclose()


def anthropic_stream(block: dict[str, Any], deltas: list[dict[str, Any]], stop: str) -> list[Any]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 1},
    }
    return [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        *[
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            for delta in deltas
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_call(call_id: str, name: str, args: dict[str, Any]) -> list[Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    text = json.dumps(args)
    pieces = [text[:5], text[5:]]
    deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
    return anthropic_stream(block, deltas, "tool_use")


def anthropic_text(text: str) -> list[Any]:
    deltas = [{"type": "text_delta", "text": text}]
    return anthropic_stream({"type": "text", "text": ""}, deltas, "end_turn")


async def test_anthropic_native_output_config_with_a_tool(
    server: ReplayServer, claude_models: dict[str, AnthropicModel]
) -> None:
    model = claude_models["claude-opus-4-7"]
    server.stream(anthropic_call("toolu_1", "thermometer", {"city": "Oslo"}))
    server.stream(anthropic_text(json.dumps(ANSWER)))
    app = create_agent(model, [thermometer], output_schema=Weather)

    result = await app.ainvoke(ask("Weather in Oslo?"))

    assert result["structured_response"] == Weather(**ANSWER)
    for index in (0, 1):
        sent = body(server, index)
        assert sent["output_config"]["format"]["type"] == "json_schema"
        assert sent["output_config"]["format"]["schema"]["required"] == ["city", "celsius"]
        assert [t["name"] for t in sent["tools"]] == ["thermometer"]
        assert sent["tool_choice"] == {"type": "auto"}
    turns = body(server, 1)["messages"]
    assert [(t["role"], t["content"][0]["type"]) for t in turns] == [
        ("user", "text"),
        ("assistant", "tool_use"),
        ("user", "tool_result"),
    ]


async def test_anthropic_tool_strategy_for_an_older_claude_and_the_next_turn(
    server: ReplayServer, claude_models: dict[str, AnthropicModel]
) -> None:
    model = claude_models["claude-3-5-haiku-latest"]
    server.stream(anthropic_call("toolu_1", "thermometer", {"city": "Oslo"}))
    server.stream(anthropic_call("toolu_2", "Weather", ANSWER))
    server.stream(anthropic_call("toolu_3", "Weather", {"city": "Rome", "celsius": 20}))
    app = create_agent(
        model, [thermometer], output_schema=Weather, checkpointer=InMemoryCheckpointer()
    )

    first = await app.ainvoke(ask("Weather in Oslo?"), CONFIG)
    second = await app.ainvoke(ask("And Rome? Guess."), CONFIG)

    assert first["structured_response"] == Weather(**ANSWER)
    assert second["structured_response"] == Weather(city="Rome", celsius=20)
    sent = body(server, 0)
    assert "output_config" not in sent
    assert [t["name"] for t in sent["tools"]] == ["thermometer", "Weather"]
    assert sent["tools"][1]["input_schema"] == Weather.model_json_schema()
    assert sent["tool_choice"] == {"type": "any"}
    turns = body(server, 2)["messages"]
    shape = [(t["role"], [b["type"] for b in t["content"]]) for t in turns]
    assert shape == [
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),  # the output call, recorded as its JSON text
        ("user", ["text"]),
    ]
    assert json.loads(turns[3]["content"][0]["text"]) == ANSWER


# --- Gemini -------------------------------------------------------------------------------


@pytest.fixture
async def gemini_models(server: ReplayServer) -> AsyncIterator[dict[str, GoogleModel]]:
    made = {
        name: GoogleModel(name, api_key="test", base_url=server.url, max_retries=0)
        for name in ("gemini-3-pro-preview", "gemini-2.5-flash")
    }
    yield made
    for model in made.values():
        await model.aclose()


def gemini_chunk(part: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "candidates": [
                {"content": {"parts": [part], "role": "model"}, "index": 0, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 9},
        }
    ]


def camel(value: Any) -> Any:
    """Gemini's JSON accepts snake_case and camelCase; compare in camelCase."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m[1].upper(), k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


async def test_gemini_3_native_json_schema_with_a_tool(
    server: ReplayServer, gemini_models: dict[str, GoogleModel]
) -> None:
    server.stream(gemini_chunk({"functionCall": {"name": "thermometer", "args": {"city": "Oslo"}}}))
    server.stream(gemini_chunk({"text": json.dumps(ANSWER)}))
    app = create_agent(gemini_models["gemini-3-pro-preview"], [thermometer], output_schema=Weather)

    result = await app.ainvoke(ask("Weather in Oslo?"))

    assert result["structured_response"] == Weather(**ANSWER)
    for index in (0, 1):
        sent = camel(body(server, index))
        assert sent["generationConfig"]["responseMimeType"] == "application/json"
        assert sent["generationConfig"]["responseJsonSchema"]["title"] == "Weather"
        declared = sent["tools"][0]["functionDeclarations"]
        assert [d["name"] for d in declared] == ["thermometer"]
    contents = camel(body(server, 1))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert "functionResponse" in contents[2]["parts"][0]


async def test_gemini_2_with_tools_uses_the_tool_strategy_and_the_next_turn(
    server: ReplayServer, gemini_models: dict[str, GoogleModel]
) -> None:
    server.stream(gemini_chunk({"functionCall": {"name": "thermometer", "args": {"city": "Oslo"}}}))
    server.stream(gemini_chunk({"functionCall": {"name": "Weather", "args": ANSWER}}))
    server.stream(gemini_chunk({"text": '{"city": "Rome", "celsius": 20}'}))
    app = create_agent(
        gemini_models["gemini-2.5-flash"],
        [thermometer],
        output_schema=Weather,
        checkpointer=InMemoryCheckpointer(),
    )

    first = await app.ainvoke(ask("Weather in Oslo?"), CONFIG)
    second = await app.ainvoke(ask("And Rome? Guess."), CONFIG)

    assert first["structured_response"] == Weather(**ANSWER)
    assert second["structured_response"] == Weather(city="Rome", celsius=20)  # JSON text: taken
    sent = camel(body(server, 0))
    assert "responseJsonSchema" not in sent.get("generationConfig", {})
    declared = sent["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["thermometer", "Weather"]
    assert sent["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    contents = camel(body(server, 2))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert json.loads(contents[3]["parts"][0]["text"]) == ANSWER  # the output call, as text


@pytest.mark.parametrize(
    ("name", "alone", "with_tools"),
    [
        ("gemini-3-pro-preview", True, True),
        ("gemini-2.5-flash", True, False),
        ("models/gemini-1.5-pro", True, False),
        ("gemini-flash-latest", True, True),
    ],
)
def test_gemini_structured_output_support_follows_the_model_name(
    name: str, alone: bool, with_tools: bool
) -> None:
    model = GoogleModel(name, api_key="test")
    assert model.supports_output_schema(with_tools=False) is alone
    assert model.supports_output_schema(with_tools=True) is with_tools
