"""GoogleModel end to end through the official google-genai SDK against a local replay server."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm.base import ModelRequest, ToolSpec
from tenxgraph.core.llm.google import GoogleModel
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
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
    ContextWindowExceededError,
    MissingExtraError,
    ModelTimeoutError,
    ServerError,
)
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.testing.chat_models import ChatModelContract
from tenxgraph.testing.replay import ReplayServer

MODEL = "gemini-2.5-flash"
STREAM_PATH = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SIGNATURE = base64.b64encode(b"opaque-thought-signature").decode()


@pytest.fixture
async def model(server: ReplayServer) -> AsyncIterator[GoogleModel]:
    model = GoogleModel(MODEL, api_key="test", base_url=server.url, max_retries=0)
    yield model
    await model.aclose()


def chunk(
    parts: list[dict[str, Any]],
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    **candidate: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0, **candidate}],
        "modelVersion": MODEL,
        "responseId": "dlc7aJ6tFqOhz7IPzdzA8Qw",
    }
    if finish:
        body["candidates"][0]["finishReason"] = finish
    if usage:
        body["usageMetadata"] = usage
    return body


USAGE = {
    "promptTokenCount": 120,
    "candidatesTokenCount": 30,
    "thoughtsTokenCount": 50,
    "cachedContentTokenCount": 64,
    "totalTokenCount": 200,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}],
}


def text_stream(*pieces: str) -> list[dict[str, Any]]:
    chunks = [chunk([{"text": piece}]) for piece in pieces]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    chunks[-1]["usageMetadata"] = USAGE
    return chunks


def camel(value: Any) -> Any:
    """``value`` with snake_case keys spelled in camelCase.

    Gemini's JSON (protobuf mapping) accepts both spellings and google-genai
    sends some nested fields in each; tests compare in one spelling.
    """
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m[1].upper(), k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


def sent_body(server: ReplayServer, index: int = 0) -> Any:
    return camel(server.requests[index].body)


def ask(text: str = "Hello") -> ModelRequest:
    return ModelRequest(messages=[Message.text_message(text)])


async def collect(model: GoogleModel, request: ModelRequest) -> list[Message]:
    return [message async for message in model.stream(request)]


async def test_text_answer_streams_deltas_then_the_complete_message(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(text_stream("Hello", " from", " Gemini."))
    request = ModelRequest(
        messages=[Message.text_message("Be brief.", role="system"), Message.text_message("Hi")],
        temperature=0.5,
        max_tokens=256,
    )

    messages = await collect(model, request)

    assert [m.text() for m in messages if m.delta] == ["Hello", " from", " Gemini."]
    final = messages[-1]
    assert not final.delta
    assert final.text() == "Hello from Gemini."
    assert final.metadata["finish_reason"] == "STOP"
    assert final.raw is not None
    assert final.raw["response_id"] == "dlc7aJ6tFqOhz7IPzdzA8Qw"
    assert final.raw["candidates"][0]["content"]["parts"] == [{"text": "Hello from Gemini."}]
    json.dumps(final.raw)
    sent = server.requests[0]
    assert sent.path == STREAM_PATH
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert sent.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent.body["generationConfig"]["temperature"] == 0.5
    assert sent.body["generationConfig"]["maxOutputTokens"] == 256


async def test_usage_maps_thoughts_and_cached_tokens(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(text_stream("ok"))

    final = await model.complete(ask())

    assert final.usages is not None
    assert final.usages.prompt_tokens == 120
    assert final.usages.completion_tokens == 80
    assert final.usages.total_tokens == 200
    assert final.usages.reasoning_tokens == 50
    assert final.usages.cache_read_input_tokens == 64


async def test_function_call_gets_an_id_and_the_result_is_sent_by_name(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(
        [
            chunk([{"text": "Checking."}]),
            chunk(
                [
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
                ],
                finish="STOP",
                usage=USAGE,
            ),
        ]
    )
    server.stream(text_stream("Sunny and rainy."))
    request = ModelRequest(
        messages=[Message.text_message("Paris and Rome?")], tools=[WEATHER], tool_choice="required"
    )

    messages = await collect(model, request)

    final = messages[-1]
    calls = final.tool_calls()
    assert [(c.name, c.args) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert all(c.id for c in calls)
    assert calls[0].id != calls[1].id
    assert [m.text() for m in messages if m.delta] == ["Checking."]
    body = sent_body(server)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parametersJsonSchema": WEATHER.parameters,
                }
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}

    stored = Message.model_validate_json(final.model_dump_json())
    results = [
        Message.tool_message([ToolResultBlock(call_id=calls[0].id, output="sunny")]),
        Message.tool_message(
            [ToolResultBlock(call_id=calls[1].id, output="API down", is_error=True)]
        ),
    ]
    await model.complete(
        ModelRequest(messages=[*request.messages, stored, *results], tools=[WEATHER])
    )

    assert sent_body(server, 1)["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "API down"}}},
            ],
        },
    ]


async def test_function_call_arguments_streamed_in_pieces_are_assembled(
    server: ReplayServer, model: GoogleModel
) -> None:
    """Vertex AI streams arguments as ``partialArgs`` by JSON path when asked to."""

    def piece(*partials: dict[str, Any], more: bool = True) -> dict[str, Any]:
        return chunk([{"functionCall": {"partialArgs": list(partials), "willContinue": more}}])

    server.stream(
        [
            chunk([{"functionCall": {"id": "fc-1", "name": "plan_trip", "willContinue": True}}]),
            piece({"jsonPath": "$.city", "stringValue": "Par", "willContinue": True}),
            piece({"jsonPath": "$.city", "stringValue": "is"}),
            piece({"jsonPath": "$.days", "numberValue": 3}),
            piece(
                {"jsonPath": "$.stops[0].name", "stringValue": "Louvre"},
                {"jsonPath": "$.stops[1].name", "stringValue": "Orsay"},
                {"jsonPath": "$.budget", "nullValue": "NULL_VALUE"},
            ),
            chunk([{"functionCall": {}}], finish="STOP", usage=USAGE),
        ]
    )

    final = await model.complete(ask("Plan Paris"))

    assert final.tool_calls() == [
        ToolCallBlock(
            id="fc-1",
            name="plan_trip",
            args={
                "city": "Paris",
                "days": 3,
                "stops": [{"name": "Louvre"}, {"name": "Orsay"}],
                "budget": None,
            },
        )
    ]


async def test_function_call_ids_from_gemini_are_kept_and_sent_back(
    server: ReplayServer, model: GoogleModel
) -> None:
    history = [
        Message.text_message("Weather?"),
        Message(
            role="assistant",
            content=[ToolCallBlock(id="fc-7", name="get_weather", args={"city": "Oslo"})],
        ),
        Message.tool_message([ToolResultBlock(call_id="fc-7", output={"sky": "snow"})]),
    ]
    server.stream(text_stream("Snow."))

    await model.complete(ModelRequest(messages=history, tools=[WEATHER]))

    assert sent_body(server)["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "fc-7", "name": "get_weather", "args": {"city": "Oslo"}}}
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "fc-7",
                        "name": "get_weather",
                        "response": {"output": '{"sky": "snow"}'},
                    }
                }
            ],
        },
    ]


async def test_thoughts_become_reasoning_and_signatures_round_trip(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(
        [
            chunk([{"text": "**Planning** the user ", "thought": True}]),
            chunk([{"text": "wants the weather.", "thought": True}]),
            chunk(
                [
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Lima"}},
                        "thoughtSignature": SIGNATURE,
                    }
                ]
            ),
            chunk([], finish="STOP", usage=USAGE),
        ]
    )

    messages = await collect(
        model, ModelRequest(messages=[Message.text_message("Lima?")], tools=[WEATHER])
    )

    assert [b for m in messages if m.delta for b in m.content] == [
        ReasoningBlock(summary="**Planning** the user "),
        ReasoningBlock(summary="wants the weather."),
    ]
    final = messages[-1]
    assert final.content[0] == ReasoningBlock(summary="**Planning** the user wants the weather.")
    call = final.tool_calls()[0]

    server.stream(text_stream("Warm."))
    stored = Message.model_validate_json(final.model_dump_json())
    result = Message.tool_message([ToolResultBlock(call_id=call.id, output="warm")])
    await model.complete(
        ModelRequest(messages=[Message.text_message("Lima?"), stored, result], tools=[WEATHER])
    )

    assert sent_body(server, 1)["contents"][1]["parts"][0] == {
        "text": "**Planning** the user wants the weather.",
        "thought": True,
    }
    assert sent_body(server, 1)["contents"][1]["parts"][1] == {
        "functionCall": {"name": "get_weather", "args": {"city": "Lima"}},
        "thoughtSignature": SIGNATURE,
    }


async def test_images_and_documents_inline_and_by_uri(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(text_stream("A cat and a report."))
    message = Message.multimodal_message(
        [
            TextBlock(text="Describe these."),
            ImageBlock(
                media=MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")
            ),
            ImageBlock(
                media=MediaRef(
                    kind="url", url="https://example.com/cat.jpg", mime_type="image/jpeg"
                )
            ),
            DocumentBlock(
                media=MediaRef(
                    kind="file_id",
                    file_id="https://generativelanguage.googleapis.com/v1beta/files/abc-123",
                    mime_type="application/pdf",
                )
            ),
            DocumentBlock(
                media=MediaRef(kind="data", data_base64="JVBERi0xLjQ=", mime_type="application/pdf")
            ),
        ]
    )

    await model.complete(ModelRequest(messages=[message]))

    assert sent_body(server)["contents"][0]["parts"] == [
        {"text": "Describe these."},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        {"fileData": {"fileUri": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}},
        {
            "fileData": {
                "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc-123",
                "mimeType": "application/pdf",
            }
        },
        {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjQ="}},
    ]


async def test_tool_results_with_media_are_sent_as_function_response_parts(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(text_stream("A rising chart."))
    chart = MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")
    history = [
        Message.text_message("Plot it."),
        Message(role="assistant", content=[ToolCallBlock(id="fc-3", name="plot", args={})]),
        Message.tool_message(
            [
                ToolResultBlock(
                    call_id="fc-3", output=[TextBlock(text="chart:"), ImageBlock(media=chart)]
                )
            ]
        ),
    ]

    await model.complete(ModelRequest(messages=history))

    assert sent_body(server)["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "fc-3",
                    "name": "plot",
                    "response": {"output": "chart:"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}],
                }
            }
        ],
    }


async def test_orphan_tool_call_is_repaired_before_sending(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(text_stream("ok"))
    history = [
        Message.text_message("Weather?"),
        Message(role="assistant", content=[ToolCallBlock(id="fc-9", name="get_weather", args={})]),
        Message.text_message("Never mind."),
    ]

    await model.complete(ModelRequest(messages=history, tools=[WEATHER]))

    assert sent_body(server)["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "fc-9",
                    "name": "get_weather",
                    "response": {"error": SYNTHETIC_RESULT_TEXT},
                }
            },
            {"text": "Never mind."},
        ],
    }


async def test_structured_output_uses_json_mime_type_and_schema(
    server: ReplayServer, model: GoogleModel
) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
    }
    server.stream(text_stream('{"answer"', ": 4}"))

    final = await model.complete(
        ModelRequest(messages=[Message.text_message("2+2?")], output_schema=schema)
    )

    assert json.loads(final.text()) == {"answer": 4}
    config = sent_body(server)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == schema


async def test_citations_of_every_chunk_become_one_annotation_block(
    server: ReplayServer, model: GoogleModel
) -> None:
    def cited(start: int, end: int, uri: str) -> dict[str, Any]:
        return {"citationSources": [{"startIndex": start, "endIndex": end, "uri": uri}]}

    server.stream(
        [
            chunk(
                [{"text": "The grass is green."}],
                citationMetadata=cited(0, 19, "https://a.example"),
            ),
            chunk([{"text": " The sky is blue."}]),
            chunk(
                [], finish="STOP", usage=USAGE, citationMetadata=cited(20, 36, "https://b.example")
            ),
        ]
    )

    final = await model.complete(ask())

    assert final.text() == "The grass is green. The sky is blue."
    annotation = final.content[-1]
    assert isinstance(annotation, AnnotationBlock)
    assert [r.url for r in annotation.refs] == ["https://a.example", "https://b.example"]
    assert annotation.spans == [(0, 19), (20, 36)]


async def test_input_token_count_exceeded_raises_context_window_exceeded(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.reply(
        {
            "error": {
                "code": 400,
                "message": (
                    "The input token count (1250000) exceeds the maximum number of tokens "
                    "allowed (1048576)."
                ),
                "status": "INVALID_ARGUMENT",
            }
        },
        status=400,
    )

    with pytest.raises(ContextWindowExceededError) as caught:
        await model.complete(ask())

    assert caught.value.status == 400
    assert caught.value.provider == "google"


async def test_unavailable_raises_server_error(server: ReplayServer, model: GoogleModel) -> None:
    server.reply(
        {
            "error": {
                "code": 503,
                "message": "The model is overloaded. Please try again later.",
                "status": "UNAVAILABLE",
            }
        },
        status=503,
    )

    with pytest.raises(ServerError):
        await model.complete(ask())


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_server_raises_model_timeout_error() -> None:
    model = GoogleModel(
        MODEL, api_key="test", base_url=f"http://127.0.0.1:{closed_port()}", max_retries=0
    )

    with pytest.raises(ModelTimeoutError) as caught:
        await model.complete(ask())

    assert caught.value.provider == "google"
    await model.aclose()


def test_missing_key_is_an_authentication_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(AuthenticationError):
        GoogleModel(MODEL)


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import google

    monkeypatch.setitem(sys.modules, "google.genai", None)
    monkeypatch.delattr(google, "genai", raising=False)

    with pytest.raises(MissingExtraError, match=r"tenxgraph\[google\]"):
        GoogleModel(MODEL, api_key="test")


def test_one_model_serves_calls_on_different_event_loops(server: ReplayServer) -> None:
    model = GoogleModel(MODEL, api_key="test", base_url=server.url, max_retries=0)

    async def call() -> str:
        try:
            return (await model.complete(ask())).text()
        finally:
            await model.aclose()

    server.stream(text_stream("first"))
    server.stream(text_stream("second"))

    assert [asyncio.run(call()), asyncio.run(call())] == ["first", "second"]


class Cart(AgentState):
    items: list[str] = []


def add_item(item: str, state: Cart) -> ToolResult:
    """Add an item to the cart."""
    return ToolResult(message=f"added {item}", state={"items": [*state.items, item]})


def add_item_call(item: str) -> list[dict[str, Any]]:
    call = {"functionCall": {"name": "add_item", "args": {"item": item}}}
    return [chunk([call], finish="STOP", usage=USAGE)]


async def test_tool_agent_runs_a_multi_turn_conversation_on_a_thread(
    server: ReplayServer, model: GoogleModel
) -> None:
    server.stream(add_item_call("tea"))
    server.stream(text_stream("Added tea."))
    server.stream(add_item_call("milk"))
    server.stream(text_stream("Added milk."))
    app = create_agent(
        model, [add_item], state=Cart, checkpointer=InMemoryCheckpointer(), system_prompt="Shop."
    )
    config = {"thread_id": "cart"}

    await app.ainvoke({"messages": [Message.text_message("add tea")]}, config)
    result = await app.ainvoke({"messages": [Message.text_message("and milk")]}, config)

    assert result["state"].items == ["tea", "milk"]
    assert result["messages"][-1].text() == "Added milk."
    body = sent_body(server, 3)
    assert body["systemInstruction"] == {"parts": [{"text": "Shop."}]}
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "add tea"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "add_item", "args": {"item": "tea"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "add_item", "response": {"output": "added tea"}}}
            ],
        },
        {"role": "model", "parts": [{"text": "Added tea."}]},
        {"role": "user", "parts": [{"text": "and milk"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "add_item", "args": {"item": "milk"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "add_item", "response": {"output": "added milk"}}}
            ],
        },
    ]


class TestGoogleContract(ChatModelContract):
    """The adapter contract (``tenxgraph.testing``) on the Gemini API wire."""

    @pytest.fixture
    def model(self, model: GoogleModel) -> GoogleModel:
        return model

    def queue_text(
        self,
        server: ReplayServer,
        pieces: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        usage = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": completion_tokens,
            "totalTokenCount": prompt_tokens + completion_tokens,
        }
        chunks = [chunk([{"text": piece}]) for piece in pieces]
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        chunks[-1]["usageMetadata"] = usage
        server.stream(chunks)

    def queue_tool_call(
        self, server: ReplayServer, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        call = {"functionCall": {"id": call_id, "name": name, "args": arguments}}
        server.stream([chunk([call], finish="STOP", usage=USAGE)])

    def queue_error(self, server: ReplayServer, status: int, message: str) -> None:
        kind = "RESOURCE_EXHAUSTED" if status == 429 else "INTERNAL"
        server.reply({"error": {"code": status, "message": message, "status": kind}}, status=status)
