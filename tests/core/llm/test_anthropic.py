"""AnthropicModel end to end through the official SDK against a local replay server."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic
import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm._convert_anthropic import OPENING_USER_TEXT
from tenxgraph.core.llm.anthropic import AnthropicModel
from tenxgraph.core.llm.base import ModelRequest, ToolSpec
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.injection import messages_for_model
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    DocumentBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.pairing import SYNTHETIC_RESULT_TEXT
from tenxgraph.core.state.tool_result import ToolResult
from tenxgraph.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    MissingExtraError,
    ModelTimeoutError,
    ServerError,
)
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.testing.chat_models import ChatModelContract
from tenxgraph.testing.replay import ReplayServer

MODEL = "claude-opus-4-7"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture
async def model(server: ReplayServer) -> AsyncIterator[AnthropicModel]:
    client = anthropic.AsyncAnthropic(api_key="test", base_url=server.url, max_retries=0)
    yield AnthropicModel(MODEL, client=client)
    await client.close()


def start(input_tokens: int = 25, **usage: int) -> tuple[str, dict[str, Any]]:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
            },
        },
    )


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def block_delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def finish(stop_reason: str, output_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def text_stream(*pieces: str) -> list[Any]:
    return [
        start(),
        block_start(0, {"type": "text", "text": ""}),
        ("ping", {"type": "ping"}),
        *[block_delta(0, {"type": "text_delta", "text": piece}) for piece in pieces],
        block_stop(0),
        *finish("end_turn", 12),
    ]


def ask(text: str = "Hello") -> ModelRequest:
    return ModelRequest(messages=[Message.text_message(text)])


async def collect(model: AnthropicModel, request: ModelRequest) -> list[Message]:
    return [message async for message in model.stream(request)]


async def test_text_answer_streams_deltas_then_the_complete_message(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("Hello", ", how can I", " help?"))
    request = ModelRequest(
        messages=[
            Message.text_message("Be brief.", role="system"),
            Message.text_message("Hi there"),
        ],
        temperature=0.2,
        max_tokens=300,
    )

    messages = await collect(model, request)

    assert [m.text() for m in messages if m.delta] == ["Hello", ", how can I", " help?"]
    final = messages[-1]
    assert not final.delta
    assert final.role == "assistant"
    assert final.text() == "Hello, how can I help?"
    assert {m.message_id for m in messages} == {final.message_id}
    assert final.raw is not None
    assert final.raw["id"] == "msg_01XFDUDYJgAACzvnptvVoYEL"
    json.dumps(final.raw)
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    headers = {name.lower(): value for name, value in sent.headers.items()}
    assert "test" in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert sent.body["system"] == [{"type": "text", "text": "Be brief."}]
    assert sent.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hi there"}]}
    ]
    assert sent.body["stream"] is True
    assert sent.body["max_tokens"] == 300
    assert sent.body["temperature"] == 0.2
    assert sent.body["model"] == MODEL


async def test_usage_maps_cache_tokens_and_thinking_tokens(
    server: ReplayServer, model: AnthropicModel
) -> None:
    events = text_stream("ok")
    events[0] = start(input_tokens=10, cache_creation_input_tokens=200, cache_read_input_tokens=50)
    events[-2] = (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 40, "output_tokens_details": {"thinking_tokens": 30}},
        },
    )
    server.stream(events)

    final = await model.complete(ask())

    assert final.usages is not None
    assert final.usages.prompt_tokens == 260
    assert final.usages.completion_tokens == 40
    assert final.usages.total_tokens == 300
    assert final.usages.cache_creation_input_tokens == 200
    assert final.usages.cache_read_input_tokens == 50
    assert final.usages.reasoning_tokens == 30


async def test_tool_call_with_input_streamed_in_pieces(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(
        [
            start(),
            block_start(0, {"type": "text", "text": ""}),
            block_delta(0, {"type": "text_delta", "text": "Let me check."}),
            block_stop(0),
            block_start(
                1,
                {
                    "type": "tool_use",
                    "id": "toolu_01A09q90qw90lq917835lq9",
                    "name": "get_weather",
                    "input": {},
                },
            ),
            block_delta(1, {"type": "input_json_delta", "partial_json": ""}),
            block_delta(1, {"type": "input_json_delta", "partial_json": '{"city": "Par'}),
            block_delta(1, {"type": "input_json_delta", "partial_json": 'is, FR"}'}),
            block_stop(1),
            *finish("tool_use", 30),
        ]
    )
    request = ModelRequest(
        messages=[Message.text_message("Weather in Paris?")],
        tools=[WEATHER],
        tool_choice="required",
    )

    messages = await collect(model, request)

    final = messages[-1]
    assert final.tool_calls() == [
        ToolCallBlock(
            id="toolu_01A09q90qw90lq917835lq9", name="get_weather", args={"city": "Paris, FR"}
        )
    ]
    assert final.text() == "Let me check."
    assert final.metadata["stop_reason"] == "tool_use"
    assert [m.text() for m in messages if m.delta] == ["Let me check."]
    body = server.requests[0].body
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["tool_choice"] == {"type": "any"}


async def test_thinking_becomes_reasoning_and_its_signature_round_trips(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(
        [
            start(),
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            block_delta(0, {"type": "thinking_delta", "thinking": "The user wants "}),
            block_delta(0, {"type": "thinking_delta", "thinking": "a greeting."}),
            block_delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"}),
            block_stop(0),
            block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}),
            block_stop(1),
            block_start(2, {"type": "text", "text": ""}),
            block_delta(2, {"type": "text_delta", "text": "Hi!"}),
            block_stop(2),
            *finish("end_turn", 20),
        ]
    )
    server.stream(text_stream("Again!"))

    messages = await collect(model, ask())
    final = messages[-1]

    assert [b for m in messages if m.delta for b in m.content] == [
        ReasoningBlock(summary="The user wants "),
        ReasoningBlock(summary="a greeting."),
        TextBlock(text="Hi!"),
    ]
    assert final.content[0] == ReasoningBlock(summary="The user wants a greeting.")
    assert isinstance(final.content[1], ReasoningBlock)
    assert final.text() == "Hi!"

    stored = Message.model_validate_json(final.model_dump_json())
    await model.complete(
        ModelRequest(messages=[*ask().messages, stored, Message.text_message("More")])
    )

    assert server.requests[1].body["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": "The user wants a greeting.",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA",
            },
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Hi!"},
        ],
    }


async def test_reasoning_from_another_provider_is_not_sent(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("ok"))
    foreign = Message(
        role="assistant",
        content=[ReasoningBlock(summary="thoughts"), TextBlock(text="Earlier answer")],
        metadata={
            "provider_data": {"provider": "google", "blocks": {"0": {"thought_signature": "x"}}}
        },
    )

    await model.complete(
        ModelRequest(messages=[Message.text_message("Hi"), foreign, Message.text_message("And?")])
    )

    assert server.requests[0].body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Earlier answer"}],
    }


async def test_citations_become_text_annotations(
    server: ReplayServer, model: AnthropicModel
) -> None:
    citation = {
        "type": "page_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "report.pdf",
        "start_page_number": 3,
        "end_page_number": 4,
    }
    server.stream(
        [
            start(),
            block_start(0, {"type": "text", "text": "", "citations": []}),
            block_delta(0, {"type": "citations_delta", "citation": citation}),
            block_delta(0, {"type": "text_delta", "text": "The grass is green."}),
            block_stop(0),
            *finish("end_turn", 9),
        ]
    )

    final = await model.complete(ask("What color is the grass?"))

    block = final.content[0]
    assert isinstance(block, TextBlock)
    assert block.text == "The grass is green."
    assert [(a.title, a.page) for a in block.annotations] == [("report.pdf", 3)]


async def test_images_and_documents_by_url_data_and_file_id(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("A cat and a report."))
    message = Message.multimodal_message(
        [
            TextBlock(text="Describe these."),
            ImageBlock(media=MediaRef(kind="url", url="https://example.com/cat.jpg")),
            ImageBlock(
                media=MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")
            ),
            DocumentBlock(
                media=MediaRef(
                    kind="data",
                    data_base64="JVBERi0xLjQ=",
                    mime_type="application/pdf",
                    filename="report.pdf",
                )
            ),
            DocumentBlock(media=MediaRef(kind="url", url="https://example.com/paper.pdf")),
            DocumentBlock(media=MediaRef(kind="file_id", file_id="file_011CNha8iCJcU1wXNR6q4V8w")),
            DocumentBlock(
                media=MediaRef(kind="data", data_base64="aGVsbG8=", mime_type="text/plain")
            ),
        ]
    )

    await model.complete(ModelRequest(messages=[message]))

    assert server.requests[0].body["messages"][0]["content"] == [
        {"type": "text", "text": "Describe these."},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
            "title": "report.pdf",
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/paper.pdf"}},
        {
            "type": "document",
            "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"},
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
        },
    ]


async def test_tool_results_merge_into_one_user_turn(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("Paris is sunny, Rome is rainy."))
    history = [
        Message.text_message("Weather in Paris and Rome?"),
        Message(
            role="assistant",
            content=[
                ToolCallBlock(id="toolu_1", name="get_weather", args={"city": "Paris"}),
                ToolCallBlock(id="toolu_2", name="get_weather", args={"city": "Rome"}),
            ],
        ),
        Message.tool_message([ToolResultBlock(call_id="toolu_1", output="sunny")]),
        Message.tool_message(
            [ToolResultBlock(call_id="toolu_2", output={"error": "down"}, is_error=True)]
        ),
        Message.text_message("Thanks, summarize."),
    ]

    final = await model.complete(ModelRequest(messages=history, tools=[WEATHER]))

    assert final.text() == "Paris is sunny, Rome is rainy."
    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "get_weather",
                    "input": {"city": "Rome"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": '{"error": "down"}',
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks, summarize."},
            ],
        },
    ]


async def test_tool_results_with_media_are_sent_as_content_blocks(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("A rising chart."))
    chart = MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")
    history = [
        Message.text_message("Plot it."),
        Message(role="assistant", content=[ToolCallBlock(id="toolu_3", name="plot", args={})]),
        Message.tool_message(
            [
                ToolResultBlock(
                    call_id="toolu_3", output=[TextBlock(text="chart:"), ImageBlock(media=chart)]
                )
            ]
        ),
    ]

    await model.complete(ModelRequest(messages=history))

    assert server.requests[0].body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_3",
            "content": [
                {"type": "text", "text": "chart:"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        }
    ]


async def test_orphan_tool_call_is_repaired_before_sending(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("ok"))
    history = [
        Message.text_message("Weather?"),
        Message(
            role="assistant", content=[ToolCallBlock(id="toolu_9", name="get_weather", args={})]
        ),
        Message.text_message("Never mind."),
    ]

    await model.complete(ModelRequest(messages=history, tools=[WEATHER]))

    user_turn = server.requests[0].body["messages"][2]
    assert user_turn["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_9",
        "content": SYNTHETIC_RESULT_TEXT,
        "is_error": True,
    }
    assert user_turn["content"][1] == {"type": "text", "text": "Never mind."}


async def test_a_conversation_opening_with_the_assistant_gets_a_user_turn_first(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(text_stream("ok"))
    state = AgentState(
        context=[Message.text_message("What next?")], context_summary="The user likes tea."
    )
    # the summary is injected as an assistant message, as 001 documents
    await model.complete(ModelRequest(messages=messages_for_model(state, "Be brief.")))

    turns = server.requests[0].body["messages"]
    assert [turn["role"] for turn in turns] == ["user", "assistant", "user"]
    assert turns[0]["content"] == [{"type": "text", "text": OPENING_USER_TEXT}]
    assert "The user likes tea." in turns[1]["content"][0]["text"]


async def test_structured_output_is_sent_as_output_config_and_comes_back_as_text(
    server: ReplayServer, model: AnthropicModel
) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer", "minimum": 0}},
        "required": ["answer"],
    }
    server.stream(text_stream('{"answer"', ": 4}"))

    messages = await collect(
        model,
        ModelRequest(
            messages=[Message.text_message("2+2?")], output_schema=schema, output_schema_name="Sum"
        ),
    )

    final = messages[-1]
    assert json.loads(final.text()) == {"answer": 4}
    assert "".join(m.text() for m in messages if m.delta) == '{"answer": 4}'
    body = server.requests[0].body
    assert "tools" not in body
    sent = body["output_config"]["format"]
    assert sent["type"] == "json_schema"
    # the SDK's transform closes objects and moves the bound it cannot enforce into a description
    assert sent["schema"]["additionalProperties"] is False
    assert "minimum" not in sent["schema"]["properties"]["answer"]
    assert schema["properties"]["answer"] == {"type": "integer", "minimum": 0}  # not mutated


async def test_output_config_defaults_are_kept_next_to_the_format(server: ReplayServer) -> None:
    client = anthropic.AsyncAnthropic(api_key="test", base_url=server.url, max_retries=0)
    model = AnthropicModel(MODEL, client=client, output_config={"effort": "low"})
    server.stream(text_stream('{"answer": 4}'))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}

    await model.complete(
        ModelRequest(messages=[Message.text_message("2+2?")], output_schema=schema)
    )

    config = server.requests[0].body["output_config"]
    assert config["effort"] == "low"
    assert config["format"]["schema"]["properties"] == {"answer": {"type": "integer"}}
    await client.close()


async def test_a_forced_tool_choice_is_sent_as_auto_while_thinking(server: ReplayServer) -> None:
    client = anthropic.AsyncAnthropic(api_key="test", base_url=server.url, max_retries=0)
    model = AnthropicModel(MODEL, client=client, thinking={"type": "adaptive"})
    server.stream(text_stream("Sunny."))
    server.stream(text_stream("Sunny."))

    for choice in ("required", "get_weather"):
        await model.complete(
            ModelRequest(
                messages=[Message.text_message("Oslo?")], tools=[WEATHER], tool_choice=choice
            )
        )

    assert [r.body["tool_choice"] for r in server.requests] == [{"type": "auto"}] * 2
    assert server.requests[0].body["thinking"] == {"type": "adaptive"}
    await client.close()


@pytest.mark.parametrize(
    ("name", "native"),
    [
        ("claude-opus-4-7", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-haiku-4-5", True),
        ("claude-opus-4-1-20250805", True),
        ("claude-sonnet-5", True),
        ("claude-latest-alias", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-0", False),
        ("claude-sonnet-4-1", False),
        ("claude-3-7-sonnet-latest", False),
        ("claude-3-5-haiku-20241022", False),
        ("claude-2.1", False),
        ("claude-instant-1.2", False),
    ],
)
def test_structured_output_support_follows_the_model_name(name: str, native: bool) -> None:
    model = AnthropicModel(name, api_key="test")
    assert model.supports_output_schema(with_tools=False) is native
    assert model.supports_output_schema(with_tools=True) is native


async def test_prompt_too_long_raises_context_window_exceeded(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.reply(
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 208310 tokens > 200000 maximum",
            },
        },
        status=400,
    )

    with pytest.raises(ContextWindowExceededError) as caught:
        await model.complete(ask())

    assert caught.value.status == 400
    assert caught.value.provider == "anthropic"
    assert "208310" in str(caught.value)


async def test_overloaded_error_event_mid_stream_is_a_server_error(
    server: ReplayServer, model: AnthropicModel
) -> None:
    server.stream(
        [
            start(),
            block_start(0, {"type": "text", "text": ""}),
            block_delta(0, {"type": "text_delta", "text": "Hel"}),
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
        ]
    )

    with pytest.raises(ServerError) as caught:
        await model.complete(ask())

    assert caught.value.status == 529


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_server_raises_model_timeout_error() -> None:
    model = AnthropicModel(
        MODEL, api_key="test", base_url=f"http://127.0.0.1:{closed_port()}", max_retries=0
    )

    with pytest.raises(ModelTimeoutError) as caught:
        await model.complete(ask())

    assert caught.value.provider == "anthropic"
    await model.aclose()


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (401, AuthenticationError, "authentication_error"),
        (404, BadRequestError, "not_found_error"),
        (529, ServerError, "overloaded_error"),
    ],
)
async def test_http_statuses_map_to_library_errors(
    server: ReplayServer, model: AnthropicModel, status: int, kind: type[Exception], error: str
) -> None:
    server.reply({"type": "error", "error": {"type": error, "message": "nope"}}, status=status)

    with pytest.raises(kind):
        await model.complete(ask())


def test_missing_key_is_an_authentication_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(MODEL)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)

    with pytest.raises(MissingExtraError, match=r"tenxgraph\[anthropic\]"):
        AnthropicModel(MODEL, api_key="test")


def test_one_model_serves_calls_on_different_event_loops(server: ReplayServer) -> None:
    model = AnthropicModel(MODEL, api_key="test", base_url=server.url, max_retries=0)

    async def call() -> str:
        try:
            return (await model.complete(ask())).text()
        finally:
            await model.aclose()

    server.stream(text_stream("first"))
    server.stream(text_stream("second"))

    assert [asyncio.run(call()), asyncio.run(call())] == ["first", "second"]


def tool_use_stream(call_id: str, item: str) -> list[Any]:
    return [
        start(),
        block_start(0, {"type": "tool_use", "id": call_id, "name": "add_item", "input": {}}),
        block_delta(0, {"type": "input_json_delta", "partial_json": '{"item": '}),
        block_delta(0, {"type": "input_json_delta", "partial_json": f'"{item}"}}'}),
        block_stop(0),
        *finish("tool_use", 15),
    ]


async def test_tool_agent_runs_a_multi_turn_conversation_on_a_thread(
    server: ReplayServer, model: AnthropicModel
) -> None:
    class Cart(AgentState):
        items: list[str] = []

    def add_item(item: str, state: Cart) -> ToolResult:
        """Add an item to the cart."""
        return ToolResult(message=f"added {item}", state={"items": [*state.items, item]})

    server.stream(tool_use_stream("toolu_1", "tea"))
    server.stream(text_stream("Added tea."))
    server.stream(tool_use_stream("toolu_2", "milk"))
    server.stream(text_stream("Added milk."))
    app = create_agent(
        model, [add_item], state=Cart, checkpointer=InMemoryCheckpointer(), system_prompt="Shop."
    )
    config = {"thread_id": "cart"}

    await app.ainvoke({"messages": [Message.text_message("add tea")]}, config)
    result = await app.ainvoke({"messages": [Message.text_message("and milk")]}, config)

    assert result["state"].items == ["tea", "milk"]
    assert result["messages"][-1].text() == "Added milk."
    last = server.requests[-1].body
    assert last["system"] == [{"type": "text", "text": "Shop."}]
    shape = [(turn["role"], [b["type"] for b in turn["content"]]) for turn in last["messages"]]
    assert shape == [
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
    ]
    assert last["messages"][-1]["content"][0]["tool_use_id"] == "toolu_2"
    assert last["tools"][0]["name"] == "add_item"


class TestAnthropicContract(ChatModelContract):
    """The adapter contract (``tenxgraph.testing``) on the Anthropic Messages wire."""

    @pytest.fixture
    def model(self, model: AnthropicModel) -> AnthropicModel:
        return model

    def queue_text(
        self,
        server: ReplayServer,
        pieces: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        server.stream(
            [
                start(input_tokens=prompt_tokens),
                block_start(0, {"type": "text", "text": ""}),
                *(block_delta(0, {"type": "text_delta", "text": piece}) for piece in pieces),
                block_stop(0),
                *finish("end_turn", completion_tokens),
            ]
        )

    def queue_tool_call(
        self, server: ReplayServer, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        text = json.dumps(arguments)
        server.stream(
            [
                start(),
                block_start(0, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
                block_delta(0, {"type": "input_json_delta", "partial_json": text[:7]}),
                block_delta(0, {"type": "input_json_delta", "partial_json": text[7:]}),
                block_stop(0),
                *finish("tool_use", 30),
            ]
        )

    def queue_error(self, server: ReplayServer, status: int, message: str) -> None:
        kind = "rate_limit_error" if status == 429 else "api_error"
        server.reply({"type": "error", "error": {"type": kind, "message": message}}, status=status)
