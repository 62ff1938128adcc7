"""OpenAIChatModel end to end through the official ``openai`` SDK against a replay server."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest

from tenxgraph.core.llm import ModelRequest, OpenAIChatModel, ToolSpec
from tenxgraph.core.llm._convert_openai import chat_params, message_from_completion
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.core.state.pairing import SYNTHETIC_RESULT_TEXT
from tenxgraph.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    MissingExtraError,
    ModelError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from tenxgraph.testing.chat_models import ChatModelContract
from tenxgraph.testing.replay import ReplayServer

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)

Make = Callable[..., OpenAIChatModel]


@pytest.fixture
async def models(server: ReplayServer) -> AsyncIterator[Make]:
    """Makes models aimed at the replay server, and closes their HTTP clients afterwards."""
    made: list[OpenAIChatModel] = []

    def make(**kwargs: Any) -> OpenAIChatModel:
        model = OpenAIChatModel(
            "gpt-test", base_url=server.url + "/v1", api_key="sk-test", max_retries=0, **kwargs
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


def chunk(
    delta: dict[str, Any] | None = None, *, finish: str | None = None, index: int = 0
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test-2025",
        "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int, **details: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test-2025",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            **details,
        },
    }


def ask(text: str = "hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=[Message.text_message(text)], **kwargs)


async def run(model: OpenAIChatModel, request: ModelRequest) -> list[Message]:
    return [message async for message in model.stream(request)]


async def test_streamed_text_with_usage(server: ReplayServer, models: Make) -> None:
    server.stream(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo!"}),
            chunk(finish="stop"),
            usage_chunk(
                12,
                5,
                prompt_tokens_details={"cached_tokens": 4, "audio_tokens": 0},
                completion_tokens_details={"reasoning_tokens": 2, "audio_tokens": 1},
            ),
            "[DONE]",
        ]
    )
    request = ModelRequest(
        messages=[
            Message.text_message("Be brief.", role="system"),
            Message.text_message("Say hello"),
        ],
        temperature=0.3,
        max_tokens=50,
    )
    messages = await run(models(), request)

    *deltas, final = messages
    assert [d.text() for d in deltas] == ["Hel", "lo!"]
    assert all(d.delta for d in deltas)
    assert not final.delta
    assert final.role == "assistant"
    assert final.content == [TextBlock(text="Hello!")]
    assert {d.message_id for d in deltas} == {final.message_id}
    assert final.usages is not None
    assert final.usages.model_dump() == {
        "prompt_tokens": 12,
        "completion_tokens": 5,
        "total_tokens": 17,
        "reasoning_tokens": 2,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 4,
        "image_tokens": 0,
        "audio_tokens": 1,
    }
    assert final.metadata["finish_reason"] == "stop"
    assert final.metadata["model"] == "gpt-test-2025"
    assert final.raw is not None
    assert final.raw["id"] == "chatcmpl-1"
    assert final.raw["choices"][0]["message"]["content"] == "Hello!"

    (sent,) = server.requests
    assert sent.path == "/v1/chat/completions"
    assert {k.lower(): v for k, v in sent.headers.items()}["authorization"] == "Bearer sk-test"
    body = sent.body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 50  # a compatible server: the classic name
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    assert "tools" not in body


async def test_official_api_gets_max_completion_tokens(server: ReplayServer, models: Make) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key="sk-x", base_url=server.url + "/v1", max_retries=0)
    server.stream([chunk({"content": "ok"}, finish="stop"), "[DONE]"])
    model = OpenAIChatModel("o3-mini", client=client)
    await model.complete(ask(max_tokens=7))
    await model.aclose()
    assert not client.is_closed()  # the caller's client is the caller's to close
    await client.close()
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 7
    assert "max_tokens" not in body


async def test_defaults_and_extra_precedence(server: ReplayServer, models: Make) -> None:
    server.stream([chunk({"content": "ok"}, finish="stop"), "[DONE]"])
    model = models(seed=1, top_p=0.5, stream_usage=False, temperature=0.9)
    await model.complete(ask(temperature=0.1, extra={"top_p": 0.7}))
    body = server.requests[0].body
    assert (body["seed"], body["top_p"], body["temperature"]) == (1, 0.7, 0.1)
    assert "stream_options" not in body


async def test_streamed_parallel_tool_calls_openai_style(
    server: ReplayServer, models: Make
) -> None:
    server.stream(
        [
            chunk({"role": "assistant", "content": None}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":'},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": ' "Rome"}'}}]}),
            chunk(finish="tool_calls"),
            usage_chunk(30, 20),
            "[DONE]",
        ]
    )
    messages = await run(models(), ask("weather?", tools=[WEATHER]))
    assert len(messages) == 1  # tool-call pieces are assembled, not streamed as deltas
    final = messages[0]
    assert final.tool_calls() == [
        ToolCallBlock(id="call_a", name="get_weather", args={"city": "Oslo"}),
        ToolCallBlock(id="call_b", name="get_weather", args={"city": "Rome"}),
    ]
    assert final.metadata["finish_reason"] == "tool_calls"
    assert final.tools_calls is not None
    assert final.tools_calls[1]["function"]["arguments"] == '{"city": "Rome"}'
    body = server.requests[0].body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["tool_choice"] == "auto"


async def test_streamed_tool_call_llama_cpp_style_repeats_name_and_id(
    server: ReplayServer, models: Make
) -> None:
    pieces = ["{", ' "', "city", '":', ' "', "Paris", '"', " }", ""]
    call_id = "call__0_get_weather_cmpl-42"
    server.stream(
        [chunk({"role": "assistant", "content": None})]
        + [
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": piece},
                        }
                    ]
                }
            )
            for piece in pieces
        ]
        + [chunk(finish="tool_calls"), "[DONE]"]
    )
    final = await models().complete(
        ask("weather in Paris", tools=[WEATHER], tool_choice="get_weather")
    )
    assert final.tool_calls() == [
        ToolCallBlock(id=call_id, name="get_weather", args={"city": "Paris"})
    ]
    assert server.requests[0].body["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }
    assert final.usages is None  # this server reported none: nothing is invented


async def test_tool_call_without_index_is_matched_by_id(server: ReplayServer, models: Make) -> None:
    server.stream(
        [
            chunk({"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"a"'}}]}),
            chunk({"tool_calls": [{"id": "c1", "function": {"arguments": ": 1}"}}]}),
            chunk({"tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": "{}"}}]}),
            "[DONE]",
        ]
    )
    final = await models().complete(ask())
    assert [(c.id, c.name, c.args) for c in final.tool_calls()] == [
        ("c1", "f", {"a": 1}),
        ("c2", "g", {}),
    ]


async def test_invalid_tool_arguments_are_kept_not_lost(server: ReplayServer, models: Make) -> None:
    server.stream(
        [
            chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{oops"}}]}),
            "[DONE]",
        ]
    )
    final = await models().complete(ask())
    assert final.tool_calls() == [ToolCallBlock(id="c1", name="f", args={})]
    refused = final.metadata["invalid_tool_args"]
    assert refused["c1"]["arguments"] == "{oops"
    assert refused["c1"]["error"].startswith("the arguments are not valid JSON (Expecting")


async def test_conversation_with_tools_and_structured_output_on_the_wire(
    server: ReplayServer, models: Make
) -> None:
    server.stream([chunk({"content": '{"answer": 4}'}, finish="stop"), "[DONE]"])
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    history = [
        Message.text_message("You add numbers.", role="system"),
        Message.text_message("2+2 and 3+3?"),
        Message(
            role="assistant",
            content=[
                ReasoningBlock(summary="two sums"),
                TextBlock(text="Let me add."),
                ToolCallBlock(id="c1", name="add", args={"a": 2, "b": 2}),
                ToolCallBlock(id="c2", name="add", args={"a": 3, "b": 3}),
            ],
        ),
        Message.tool_message(
            [
                ToolResultBlock(call_id="c1", output=4),
                ToolResultBlock(call_id="c2", output={"sum": 6}),
            ]
        ),
    ]
    request = ModelRequest(
        messages=history,
        output_schema=schema,
        output_schema_name="Answer",
        tools=[WEATHER],
        tool_choice="none",
    )
    final = await models().complete(request)
    assert final.text() == '{"answer": 4}'
    assert final.parsed_content is None  # validation belongs to the Agent
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "You add numbers."},
        {"role": "user", "content": "2+2 and 3+3?"},
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 3, "b": 3}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "4"},
        {"role": "tool", "tool_call_id": "c2", "content": '{"sum": 6}'},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": schema},
    }
    assert body["tool_choice"] == "none"


async def test_orphans_are_repaired_before_sending(server: ReplayServer, models: Make) -> None:
    server.stream([chunk({"content": "ok"}, finish="stop"), "[DONE]"])
    history = [
        Message.text_message("hi"),
        Message(role="assistant", content=[ToolCallBlock(id="lost", name="f")]),
        Message.text_message("still there?"),
        Message.tool_message([ToolResultBlock(call_id="stray", output="x")]),
    ]
    await models().complete(ModelRequest(messages=history))
    wire = server.requests[0].body["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "user"]
    assert wire[2] == {"role": "tool", "tool_call_id": "lost", "content": SYNTHETIC_RESULT_TEXT}
    assert all(m.get("tool_call_id") != "stray" for m in wire)


async def test_reasoning_content_is_streamed_and_kept(server: ReplayServer, models: Make) -> None:
    server.stream(
        [
            chunk({"role": "assistant", "reasoning_content": "Think"}),
            chunk({"reasoning_content": "ing..."}),
            chunk({"content": "42"}),
            chunk(finish="stop"),
            usage_chunk(5, 9, completion_tokens_details={"reasoning_tokens": 7}),
            "[DONE]",
        ]
    )
    *deltas, final = await run(models(), ask("meaning of life"))
    assert [type(d.content[0]).__name__ for d in deltas] == [
        "ReasoningBlock",
        "ReasoningBlock",
        "TextBlock",
    ]
    assert final.content == [ReasoningBlock(summary="Thinking..."), TextBlock(text="42")]
    assert final.usages is not None
    assert final.usages.reasoning_tokens == 7


async def test_reasoning_field_of_other_servers(server: ReplayServer, models: Make) -> None:
    server.stream([chunk({"reasoning": "hmm"}), chunk({"content": "yes"}), "[DONE]"])
    final = await models().complete(ask())
    assert final.content[0] == ReasoningBlock(summary="hmm")


async def test_url_citations_become_annotations(server: ReplayServer, models: Make) -> None:
    annotation = {
        "type": "url_citation",
        "url_citation": {
            "start_index": 10,
            "end_index": 25,
            "url": "https://example.com/tide",
            "title": "Tide tables",
        },
    }
    server.stream(
        [
            chunk({"content": "High tide "}),
            chunk({"content": "is at 6pm [1]."}),
            chunk({"annotations": [annotation]}, finish="stop"),
            "[DONE]",
        ]
    )
    final = await models().complete(ask("tide?"))
    text, citation = final.content
    assert isinstance(text, TextBlock)
    assert text.text == "High tide is at 6pm [1]."
    assert [(a.url, a.title) for a in text.annotations] == [
        ("https://example.com/tide", "Tide tables")
    ]
    assert isinstance(citation, AnnotationBlock)
    assert citation.spans == [(10, 25)]


async def test_refusal_is_reported(server: ReplayServer, models: Make) -> None:
    server.stream([chunk({"refusal": "I can't help"}), chunk({"refusal": " with that."}), "[DONE]"])
    final = await models().complete(ask())
    assert final.text() == "I can't help with that."
    assert final.metadata["refusal"] == "I can't help with that."


async def test_multimodal_user_content_on_the_wire(server: ReplayServer, models: Make) -> None:
    server.stream([chunk({"content": "A cat."}), "[DONE]"])
    png = "iVBORw0KGgo="
    message = Message(
        role="user",
        content=[
            TextBlock(text="What is in these?"),
            ImageBlock(media=MediaRef(kind="url", url="https://example.com/cat.png")),
            ImageBlock(media=MediaRef(kind="data", data_base64=png, mime_type="image/png")),
            AudioBlock(media=MediaRef(kind="data", data_base64="UklGRg==", mime_type="audio/wav")),
            DocumentBlock(media=MediaRef(kind="file_id", file_id="file-123")),
            DocumentBlock(
                media=MediaRef(
                    kind="data",
                    data_base64="JVBERi0=",
                    mime_type="application/pdf",
                    filename="report.pdf",
                )
            ),
        ],
    )
    await models().complete(ModelRequest(messages=[message]))
    (wire,) = server.requests[0].body["messages"]
    assert wire["role"] == "user"
    assert wire["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-123"}},
        {
            "type": "file",
            "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
        },
    ]


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        (ImageBlock(media=MediaRef(kind="file_id", file_id="file-1")), "image by file id"),
        (AudioBlock(media=MediaRef(kind="url", url="https://x/a.mp3")), "audio only as inline"),
        (DocumentBlock(media=MediaRef(kind="url", url="https://x/d.pdf")), "file by URL"),
    ],
)
async def test_unsupported_content_fails_before_sending(
    server: ReplayServer, models: Make, block: Any, problem: str
) -> None:
    history = [Message.text_message("first"), Message(role="user", content=[block])]
    with pytest.raises(BadRequestError, match=rf"message 1 \(user\): block 0: .*{problem}"):
        await models().complete(ModelRequest(messages=history))
    assert server.requests == []


async def test_forced_tool_must_be_offered(server: ReplayServer, models: Make) -> None:
    with pytest.raises(BadRequestError, match="tool_choice 'nope' is not one of"):
        await models().complete(ask(tools=[WEATHER], tool_choice="nope"))


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            ContextWindowExceededError,
        ),
        (
            400,
            {"error": {"message": "Requested tokens (3000) exceed context window of 2048"}},
            ContextWindowExceededError,
        ),
        (429, {"error": {"message": "Rate limit reached", "code": "rate_limit"}}, RateLimitError),
        (401, {"error": {"message": "Incorrect API key"}}, AuthenticationError),
        (403, {"error": {"message": "Forbidden"}}, AuthenticationError),
        (400, {"error": {"message": "Unknown parameter: 'foo'"}}, BadRequestError),
        (404, {"error": {"message": "model not found"}}, BadRequestError),
        (500, {"error": {"message": "The server had an error"}}, ServerError),
        (503, {"error": {"message": "overloaded"}}, ServerError),
    ],
)
async def test_http_errors_map_to_library_errors(
    server: ReplayServer, models: Make, status: int, body: dict[str, Any], error: type[ModelError]
) -> None:
    server.reply(body, status=status)
    with pytest.raises(error) as caught:
        await models().complete(ask())
    assert type(caught.value) is error
    assert caught.value.status == status
    assert caught.value.provider == "openai"
    assert body["error"]["message"] in str(caught.value)
    assert len(server.requests) == 1  # the SDK's own retries are off


async def test_error_event_mid_stream(server: ReplayServer, models: Make) -> None:
    server.stream([chunk({"content": "par"}), {"error": {"message": "upstream died"}}])
    seen: list[Message] = []
    with pytest.raises(ModelError, match="upstream died"):
        async for message in models().stream(ask()):
            seen.append(message)
    assert [m.text() for m in seen] == ["par"]


async def test_unreachable_server_is_a_timeout_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=2)
    with pytest.raises(ModelTimeoutError, match="could not get an answer"):
        await model.complete(ask())
    await model.aclose()


def test_self_hosted_servers_need_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = OpenAIChatModel("llama", base_url="http://127.0.0.1:1/v1", provider="vllm")
    assert model.provider == "vllm"
    with pytest.raises(AuthenticationError, match="pass api_key= or set OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o")


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(
        MissingExtraError, match=r'tenxgraph\[openai\].*pip install -e "\.\[openai\]"'
    ):
        OpenAIChatModel("gpt-4o", api_key="sk-x")


# --- the converter on its own: shapes the replay tests above do not reach -----------


def test_strings_only_wire_for_plain_chat_templates() -> None:
    history = [
        Message.text_message("Weather?"),
        Message(role="assistant", content=[ToolCallBlock(id="c1", name="get_weather")]),
        Message.tool_message([ToolResultBlock(call_id="c1", output=[TextBlock(text="Sunny")])]),
    ]
    params = chat_params(
        ModelRequest(messages=history, output_schema={"type": "object"}),
        provider="local",
        schema_style="json_object",
        strings_only=True,
    )
    assert params["messages"][1]["content"] == ""  # never null: templates concatenate it
    assert params["messages"][2] == {"role": "tool", "tool_call_id": "c1", "content": "Sunny"}
    assert params["response_format"] == {"type": "json_object", "schema": {"type": "object"}}
    image = Message(
        role="user", content=[ImageBlock(media=MediaRef(kind="url", url="https://x/i.png"))]
    )
    with pytest.raises(BadRequestError, match=r"local: message 0 \(user\): block 0: image content"):
        chat_params(ModelRequest(messages=[image]), provider="local", strings_only=True)


def test_tool_output_with_media_is_refused() -> None:
    history = [
        Message(role="assistant", content=[ToolCallBlock(id="c1", name="snap")]),
        Message.tool_message(
            [ToolResultBlock(call_id="c1", output=MediaRef(kind="url", url="https://x/i.png"))]
        ),
    ]
    with pytest.raises(BadRequestError, match=r"message 1 \(tool\): a tool result holding media"):
        chat_params(ModelRequest(messages=history), provider="openai")


def test_data_blocks_and_mp3_audio() -> None:
    message = Message(
        role="user",
        content=[
            DataBlock(mime_type="text/csv", data_base64="YSxiCg=="),
            AudioBlock(media=MediaRef(kind="data", data_base64="SUQz", mime_type="audio/mpeg")),
        ],
    )
    (wire,) = chat_params(ModelRequest(messages=[message]), provider="openai")["messages"]
    assert wire["content"] == [
        {
            "type": "file",
            "file": {"filename": "file", "file_data": "data:text/csv;base64,YSxiCg=="},
        },
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
    ]


def test_complete_response_with_audio_output() -> None:
    completion = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "gpt-4o-audio-preview",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "audio": {
                        "id": "audio_1",
                        "data": "UklGRg==",
                        "format": "wav",
                        "transcript": "Hello",
                    },
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12},
    }
    message = message_from_completion(completion, message_id="m1")
    (audio,) = message.content
    assert isinstance(audio, AudioBlock)
    assert audio.transcript == "Hello"
    assert audio.media.mime_type == "audio/wav"
    assert message.message_id == "m1"
    assert message.raw == completion
    assert message.usages is not None
    assert message.usages.total_tokens == 12


def test_one_model_serves_several_event_loops(server: ReplayServer) -> None:
    model = OpenAIChatModel("gpt-test", base_url=server.url + "/v1", max_retries=0)

    async def once() -> str:
        try:
            return (await model.complete(ask())).text()
        finally:
            await model.aclose()

    answers = []
    for text in ("first", "second"):
        server.stream([chunk({"content": text}, finish="stop"), "[DONE]"])
        answers.append(asyncio.run(once()))
    assert answers == ["first", "second"]


class TestOpenAIChatContract(ChatModelContract):
    """The adapter contract (``tenxgraph.testing``) on the Chat Completions wire."""

    @pytest.fixture
    def model(self, models: Make) -> OpenAIChatModel:
        return models()

    def queue_text(
        self,
        server: ReplayServer,
        pieces: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        server.stream(
            [
                chunk({"role": "assistant", "content": ""}),
                *(chunk({"content": piece}) for piece in pieces),
                chunk(finish="stop"),
                usage_chunk(prompt_tokens, completion_tokens),
                "[DONE]",
            ]
        )

    def queue_tool_call(
        self, server: ReplayServer, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        text = json.dumps(arguments)
        call = {"index": 0, "id": call_id, "type": "function"}
        server.stream(
            [
                chunk({"role": "assistant", "tool_calls": [{**call, "function": {"name": name}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[:7]}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": text[7:]}}]}),
                chunk(finish="tool_calls"),
                "[DONE]",
            ]
        )

    def queue_error(self, server: ReplayServer, status: int, message: str) -> None:
        server.reply({"error": {"message": message}}, status=status)
