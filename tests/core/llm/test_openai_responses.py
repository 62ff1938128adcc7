"""OpenAIResponsesModel end to end through the official SDK against a local replay server."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai
import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm.base import ModelRequest, ToolSpec
from tenxgraph.core.llm.openai_responses import OpenAIResponsesModel
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    AudioBlock,
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
    BadRequestError,
    ContextWindowExceededError,
    MissingExtraError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.testing.chat_models import ChatModelContract
from tenxgraph.testing.replay import ReplayServer

MODEL = "gpt-5.1"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
USAGE = {
    "input_tokens": 328,
    "input_tokens_details": {"cached_tokens": 256, "cache_write_tokens": 0},
    "output_tokens": 52,
    "output_tokens_details": {"reasoning_tokens": 32},
    "total_tokens": 380,
}


@pytest.fixture
async def model(server: ReplayServer) -> AsyncIterator[OpenAIResponsesModel]:
    client = openai.AsyncOpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0)
    yield OpenAIResponsesModel(MODEL, client=client)
    await client.close()


def response(
    status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-5.1-2025-11-13",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


class Events:
    """Builds a realistic Responses event sequence with increasing sequence numbers."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def add(self, kind: str, **fields: Any) -> Events:
        payload = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append((kind, payload))
        return self

    def created(self) -> Events:
        self.add("response.created", response=response("in_progress", []))
        return self.add("response.in_progress", response=response("in_progress", []))

    def text_item(
        self, index: int, item_id: str, pieces: list[str], annotations: list[Any] | None = None
    ) -> dict[str, Any]:
        text = "".join(pieces)
        part = {
            "type": "output_text",
            "text": text,
            "annotations": annotations or [],
            "logprobs": [],
        }
        item = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }
        self.add(
            "response.output_item.added",
            output_index=index,
            item={**item, "status": "in_progress", "content": []},
        )
        self.add(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for piece in pieces:
            self.add(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        self.add(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
            logprobs=[],
        )
        self.add(
            "response.content_part.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=part,
        )
        self.add("response.output_item.done", output_index=index, item=item)
        return item

    def completed(
        self, output: list[dict[str, Any]], usage: dict[str, Any] | None = None
    ) -> list[Any]:
        self.add("response.completed", response=response("completed", output, usage or USAGE))
        return self.events


def text_answer(*pieces: str) -> list[Any]:
    events = Events().created()
    item = events.text_item(0, "msg_67ccd2bf17f0819081ff3bb2cf6508e6", list(pieces))
    return events.completed([item])


def ask(text: str = "Hello") -> ModelRequest:
    return ModelRequest(messages=[Message.text_message(text)])


async def collect(model: OpenAIResponsesModel, request: ModelRequest) -> list[Message]:
    return [message async for message in model.stream(request)]


async def test_text_answer_streams_deltas_then_the_complete_message(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(text_answer("Hi", " there", "!"))
    request = ModelRequest(
        messages=[Message.text_message("Be brief.", role="system"), Message.text_message("Hello")],
        temperature=0.3,
        max_tokens=200,
    )

    messages = await collect(model, request)

    assert [m.text() for m in messages if m.delta] == ["Hi", " there", "!"]
    final = messages[-1]
    assert not final.delta
    assert final.text() == "Hi there!"
    assert final.raw is not None
    assert final.raw["id"] == "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"
    json.dumps(final.raw)
    assert {m.message_id for m in messages} == {final.message_id}
    sent = server.requests[0]
    assert sent.path == "/v1/responses"
    assert sent.body["model"] == MODEL
    assert sent.body["stream"] is True
    assert sent.body["temperature"] == 0.3
    assert sent.body["max_output_tokens"] == 200
    assert sent.body["input"] == [
        {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": "Be brief."}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
    ]


async def test_usage_maps_cached_and_reasoning_tokens(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(text_answer("ok"))

    final = await model.complete(ask())

    assert final.usages is not None
    assert final.usages.prompt_tokens == 328
    assert final.usages.completion_tokens == 52
    assert final.usages.total_tokens == 380
    assert final.usages.cache_read_input_tokens == 256
    assert final.usages.reasoning_tokens == 32


async def test_url_citations_become_annotations(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    annotation = {
        "type": "url_citation",
        "start_index": 0,
        "end_index": 24,
        "url": "https://example.com/news",
        "title": "Example News",
    }
    events = Events().created()
    item = events.text_item(0, "msg_1", ["Rain is expected today."], [annotation])
    server.stream(events.completed([item]))

    final = await model.complete(ask("News?"))

    block = final.content[0]
    assert isinstance(block, TextBlock)
    assert [(a.url, a.title, a.index) for a in block.annotations] == [
        ("https://example.com/news", "Example News", 0)
    ]


def tool_call_events(arguments: list[str]) -> list[Any]:
    events = Events().created()
    call = {
        "id": "fc_67ca09c6bedc8190a7abfec07b1a1332",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_unLAR8MvFNptuiZK6K6HCy5k",
        "name": "get_weather",
        "arguments": "".join(arguments),
    }
    events.add(
        "response.output_item.added",
        output_index=0,
        item={**call, "arguments": "", "status": "in_progress"},
    )
    for piece in arguments:
        events.add(
            "response.function_call_arguments.delta",
            item_id=call["id"],
            output_index=0,
            delta=piece,
        )
    events.add(
        "response.function_call_arguments.done",
        item_id=call["id"],
        output_index=0,
        arguments=call["arguments"],
    )
    events.add("response.output_item.done", output_index=0, item=call)
    return events.completed([call])


async def test_tool_call_streamed_in_pieces(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(tool_call_events(['{"ci', 'ty": "Par', 'is"}']))
    request = ModelRequest(
        messages=[Message.text_message("Weather in Paris?")],
        tools=[WEATHER],
        tool_choice="get_weather",
    )

    messages = await collect(model, request)

    assert [m for m in messages if m.delta] == []
    final = messages[-1]
    assert final.tool_calls() == [
        ToolCallBlock(
            id="call_unLAR8MvFNptuiZK6K6HCy5k", name="get_weather", args={"city": "Paris"}
        )
    ]
    body = server.requests[0].body
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": WEATHER.parameters,
            "strict": False,
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}


async def test_reasoning_summary_streams_and_round_trips(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    events = Events().created()
    reasoning = {
        "id": "rs_6820f383d7c08191846711c5df8233bc",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "**Greeting** The user says hello."}],
        "encrypted_content": "gAAAAABoISQ24OyVRYbkYfukb",
    }
    events.add("response.output_item.added", output_index=0, item={**reasoning, "summary": []})
    events.add(
        "response.reasoning_summary_part.added",
        item_id=reasoning["id"],
        output_index=0,
        summary_index=0,
        part={"type": "summary_text", "text": ""},
    )
    for piece in ["**Greeting** ", "The user says hello."]:
        events.add(
            "response.reasoning_summary_text.delta",
            item_id=reasoning["id"],
            output_index=0,
            summary_index=0,
            delta=piece,
        )
    events.add("response.output_item.done", output_index=0, item=reasoning)
    item = events.text_item(1, "msg_2", ["Hello!"])
    server.stream(events.completed([reasoning, item]))
    server.stream(text_answer("Again"))

    messages = await collect(model, ask())
    final = messages[-1]

    assert [b for m in messages if m.delta for b in m.content] == [
        ReasoningBlock(summary="**Greeting** "),
        ReasoningBlock(summary="The user says hello."),
        TextBlock(text="Hello!"),
    ]
    assert final.content[0] == ReasoningBlock(summary="**Greeting** The user says hello.")
    stored = Message.model_validate_json(final.model_dump_json())
    await model.complete(
        ModelRequest(messages=[*ask().messages, stored, Message.text_message("More")])
    )
    assert server.requests[1].body["input"][1:3] == [
        reasoning,
        {"type": "message", "role": "assistant", "content": "Hello!"},
    ]


async def test_image_and_document_inputs(server: ReplayServer, model: OpenAIResponsesModel) -> None:
    server.stream(text_answer("A cat and a report."))
    message = Message.multimodal_message(
        [
            TextBlock(text="Describe these."),
            ImageBlock(media=MediaRef(kind="url", url="https://example.com/cat.jpg")),
            ImageBlock(
                media=MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")
            ),
            ImageBlock(media=MediaRef(kind="file_id", file_id="file-6F2ksmvXxt4VdoqmHRw6kL")),
            DocumentBlock(
                media=MediaRef(
                    kind="data",
                    data_base64="JVBERi0xLjQ=",
                    mime_type="application/pdf",
                    filename="report.pdf",
                )
            ),
            DocumentBlock(media=MediaRef(kind="url", url="https://example.com/paper.pdf")),
            DocumentBlock(media=MediaRef(kind="file_id", file_id="file-Wp6yFhKZ1q3oRvV7")),
        ]
    )

    await model.complete(ModelRequest(messages=[message]))

    assert server.requests[0].body["input"][0]["content"] == [
        {"type": "input_text", "text": "Describe these."},
        {"type": "input_image", "detail": "auto", "image_url": "https://example.com/cat.jpg"},
        {
            "type": "input_image",
            "detail": "auto",
            "image_url": "data:image/png;base64,iVBORw0KGgo=",
        },
        {"type": "input_image", "detail": "auto", "file_id": "file-6F2ksmvXxt4VdoqmHRw6kL"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
            "filename": "report.pdf",
        },
        {"type": "input_file", "file_url": "https://example.com/paper.pdf"},
        {"type": "input_file", "file_id": "file-Wp6yFhKZ1q3oRvV7"},
    ]


async def test_audio_input_is_refused_with_a_clear_error(model: OpenAIResponsesModel) -> None:
    message = Message.multimodal_message(
        [AudioBlock(media=MediaRef(kind="url", url="https://example.com/a.mp3"))]
    )

    with pytest.raises(BadRequestError, match=r"audio.*message 0 block 0"):
        await model.complete(ModelRequest(messages=[message]))


async def test_conversation_with_tool_results(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(text_answer("Sunny in Paris."))
    history = [
        Message.text_message("Weather in Paris?"),
        Message(
            role="assistant",
            content=[ToolCallBlock(id="call_1", name="get_weather", args={"city": "Paris"})],
        ),
        Message.tool_message([ToolResultBlock(call_id="call_1", output={"sky": "sunny"})]),
    ]

    final = await model.complete(ModelRequest(messages=history, tools=[WEATHER]))

    assert final.text() == "Sunny in Paris."
    assert server.requests[0].body["input"][1:] == [
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"sky": "sunny"}'},
    ]


async def test_tool_results_with_media_are_sent_as_input_parts(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(text_answer("A rising chart."))
    chart = MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")
    history = [
        Message.text_message("Plot it."),
        Message(role="assistant", content=[ToolCallBlock(id="call_3", name="plot", args={})]),
        Message.tool_message(
            [
                ToolResultBlock(
                    call_id="call_3", output=[TextBlock(text="chart:"), ImageBlock(media=chart)]
                )
            ]
        ),
    ]

    await model.complete(ModelRequest(messages=history))

    assert server.requests[0].body["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_3",
        "output": [
            {"type": "input_text", "text": "chart:"},
            {
                "type": "input_image",
                "detail": "auto",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
            },
        ],
    }


async def test_orphan_tool_call_is_repaired_before_sending(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(text_answer("ok"))
    history = [
        Message.text_message("Weather?"),
        Message(
            role="assistant", content=[ToolCallBlock(id="call_9", name="get_weather", args={})]
        ),
        Message.text_message("Never mind."),
    ]

    await model.complete(ModelRequest(messages=history, tools=[WEATHER]))

    assert server.requests[0].body["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": SYNTHETIC_RESULT_TEXT,
    }


async def test_structured_output_uses_text_format_json_schema(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    server.stream(text_answer('{"answer"', ": 4}"))

    final = await model.complete(
        ModelRequest(
            messages=[Message.text_message("2+2?")], output_schema=schema, output_schema_name="Sum"
        )
    )

    assert json.loads(final.text()) == {"answer": 4}
    assert server.requests[0].body["text"] == {
        "format": {"type": "json_schema", "name": "Sum", "schema": schema, "strict": True}
    }


async def test_context_length_exceeded(server: ReplayServer, model: OpenAIResponsesModel) -> None:
    server.reply(
        {
            "error": {
                "message": (
                    "Your input exceeds the context window of this model. "
                    "Please adjust your input and try again."
                ),
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
        status=400,
    )

    with pytest.raises(ContextWindowExceededError) as caught:
        await model.complete(ask())

    assert caught.value.status == 400
    assert caught.value.provider == "openai"


async def test_failed_response_in_the_stream_is_mapped(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    events = Events().created()
    failed = response("failed", [])
    failed["error"] = {
        "code": "server_error",
        "message": "The server had an error while processing your request.",
    }
    events.add("response.failed", response=failed)
    server.stream(events.events)

    with pytest.raises(ServerError, match="server had an error"):
        await model.complete(ask())


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_server_raises_model_timeout_error() -> None:
    model = OpenAIResponsesModel(
        MODEL, base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=0
    )

    with pytest.raises(ModelTimeoutError) as caught:
        await model.complete(ask())

    assert caught.value.provider == "openai"
    await model.aclose()


async def test_error_event_in_the_stream_is_mapped(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    events = Events().created()
    events.add(
        "error",
        code="rate_limit_exceeded",
        message="Rate limit reached for gpt-5.1.",
        param=None,
    )
    server.stream(events.events)

    with pytest.raises(RateLimitError):
        await model.complete(ask())


def test_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)

    with pytest.raises(MissingExtraError, match=r"tenxgraph\[openai\]"):
        OpenAIResponsesModel(MODEL, api_key="test")


def test_one_model_serves_calls_on_different_event_loops(server: ReplayServer) -> None:
    model = OpenAIResponsesModel(MODEL, base_url=server.url + "/v1", max_retries=0)

    async def call() -> str:
        try:
            return (await model.complete(ask())).text()
        finally:
            await model.aclose()

    server.stream(text_answer("first"))
    server.stream(text_answer("second"))

    assert [asyncio.run(call()), asyncio.run(call())] == ["first", "second"]


class Cart(AgentState):
    items: list[str] = []


def add_item(item: str, state: Cart) -> ToolResult:
    """Add an item to the cart."""
    return ToolResult(message=f"added {item}", state={"items": [*state.items, item]})


def add_item_call(call_id: str, item: str) -> list[Any]:
    events = Events().created()
    call = {
        "id": f"fc_{call_id}",
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": "add_item",
        "arguments": json.dumps({"item": item}),
    }
    events.add("response.output_item.added", output_index=0, item={**call, "arguments": ""})
    events.add(
        "response.function_call_arguments.delta",
        item_id=call["id"],
        output_index=0,
        delta=call["arguments"],
    )
    events.add("response.output_item.done", output_index=0, item=call)
    return events.completed([call])


async def test_tool_agent_runs_a_multi_turn_conversation_on_a_thread(
    server: ReplayServer, model: OpenAIResponsesModel
) -> None:
    server.stream(add_item_call("call_1", "tea"))
    server.stream(text_answer("Added tea."))
    server.stream(add_item_call("call_2", "milk"))
    server.stream(text_answer("Added milk."))
    app = create_agent(
        model, [add_item], state=Cart, checkpointer=InMemoryCheckpointer(), system_prompt="Shop."
    )
    config = {"thread_id": "cart"}

    await app.ainvoke({"messages": [Message.text_message("add tea")]}, config)
    result = await app.ainvoke({"messages": [Message.text_message("and milk")]}, config)

    assert result["state"].items == ["tea", "milk"]
    assert result["messages"][-1].text() == "Added milk."
    items = server.requests[-1].body["input"]
    assert [(item["type"], item.get("role")) for item in items] == [
        ("message", "system"),
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        ("message", "user"),
        ("function_call", None),
        ("function_call_output", None),
    ]
    assert items[2]["id"] == "fc_call_1"
    assert [items[3]["call_id"], items[7]["call_id"]] == ["call_1", "call_2"]


class TestOpenAIResponsesContract(ChatModelContract):
    """The adapter contract (``tenxgraph.testing``) on the Responses API wire."""

    @pytest.fixture
    def model(self, model: OpenAIResponsesModel) -> OpenAIResponsesModel:
        return model

    def queue_text(
        self,
        server: ReplayServer,
        pieces: Sequence[str],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        usage = {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + completion_tokens,
        }
        events = Events().created()
        item = events.text_item(0, "msg_1", list(pieces))
        server.stream(events.completed([item], usage))

    def queue_tool_call(
        self, server: ReplayServer, call_id: str, name: str, arguments: dict[str, Any]
    ) -> None:
        text = json.dumps(arguments)
        call = {"id": "fc_1", "type": "function_call", "call_id": call_id, "name": name}
        events = Events().created()
        added = {**call, "arguments": "", "status": "in_progress"}
        events.add("response.output_item.added", output_index=0, item=added)
        for piece in (text[:7], text[7:]):
            events.add(
                "response.function_call_arguments.delta",
                item_id="fc_1",
                output_index=0,
                delta=piece,
            )
        events.add(
            "response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments=text
        )
        done = {**call, "arguments": text, "status": "completed"}
        events.add("response.output_item.done", output_index=0, item=done)
        server.stream(events.completed([done]))

    def queue_error(self, server: ReplayServer, status: int, message: str) -> None:
        code = "rate_limit_exceeded" if status == 429 else "server_error"
        body = {"error": {"message": message, "type": "tokens", "param": None, "code": code}}
        server.reply(body, status=status)
