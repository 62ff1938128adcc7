"""Text from a provider holding lone surrogates: replaced by U+FFFD and noted, not a failed run."""

from __future__ import annotations

from typing import Any

from tenxgraph.core.llm.anthropic import AnthropicModel
from tenxgraph.core.llm.base import ModelRequest
from tenxgraph.core.llm.openai import OpenAIChatModel
from tenxgraph.core.state.message import Message
from tenxgraph.testing.replay import ReplayServer, chat_chunk


def ask() -> ModelRequest:
    return ModelRequest(messages=[Message.text_message("hi")])


async def collect(model: Any) -> list[Message]:
    try:
        return [message async for message in model.stream(ask())]
    finally:
        await model.aclose()


async def test_openai_chat_text_with_a_lone_surrogate_is_kept_with_a_replacement(
    server: ReplayServer,
) -> None:
    # json.dumps writes the lone surrogate as the escape "\ud800", as a broken server would.
    server.stream(
        [chat_chunk({"content": "caf\ud800"}), chat_chunk({"content": " ok"}, "stop"), "[DONE]"]
    )
    model = OpenAIChatModel("gpt-test", base_url=server.url + "/v1", api_key="k", max_retries=0)

    messages = await collect(model)

    assert [m.text() for m in messages if m.delta] == ["caf\ufffd", " ok"]
    final = messages[-1]
    assert final.text() == "caf\ufffd ok"
    assert final.metadata["replaced_lone_surrogates"] is True
    assert Message.model_validate_json(final.model_dump_json()) == final  # it can be stored


async def test_anthropic_text_with_a_lone_surrogate_is_kept_with_a_replacement(
    server: ReplayServer,
) -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    text = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": "\udc80bad"}
    server.stream(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": text},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 2},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    model = AnthropicModel("claude-test", api_key="k", base_url=server.url, max_retries=0)

    messages = await collect(model)

    assert messages[-1].text() == "\ufffdbad"
    assert messages[-1].metadata["replaced_lone_surrogates"] is True


async def test_clean_text_gets_no_note(server: ReplayServer) -> None:
    server.stream([chat_chunk({"content": "caf\u00e9 \U0001f600"}, "stop"), "[DONE]"])
    model = OpenAIChatModel("gpt-test", base_url=server.url + "/v1", api_key="k", max_retries=0)

    final = (await collect(model))[-1]

    assert final.text() == "caf\u00e9 \U0001f600"
    assert "replaced_lone_surrogates" not in final.metadata


async def test_a_lone_surrogate_in_tool_arguments_refuses_the_call(server: ReplayServer) -> None:
    call = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"path": "tmp/\\ud800"}'},
    }
    server.stream([chat_chunk({"tool_calls": [call]}, "tool_calls"), "[DONE]"])
    model = OpenAIChatModel("gpt-test", base_url=server.url + "/v1", api_key="k", max_retries=0)

    final = (await collect(model))[-1]

    assert [c.args for c in final.tool_calls()] == [{}]
    refused = final.metadata["invalid_tool_args"]["c1"]
    assert "lone surrogate" in refused["error"]
    assert refused["arguments"] == '{"path": "tmp/\\ud800"}'
