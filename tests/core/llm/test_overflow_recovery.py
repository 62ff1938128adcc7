"""Overflow recovery through the official SDKs: the replay server acts as a provider with a
context window, refusing with that provider's real context-length error while a request is
larger than the window, and answering once it fits."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tenxgraph.core.graph import Agent, StateGraph
from tenxgraph.core.llm.anthropic import AnthropicModel
from tenxgraph.core.llm.base import ChatModel
from tenxgraph.core.llm.google import GoogleModel
from tenxgraph.core.llm.openai import OpenAIChatModel
from tenxgraph.core.state import (
    AgentState,
    Message,
    MessageContextManager,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.errors import ContextWindowExceededError
from tenxgraph.testing.replay import ReplayServer, Reply, chat_chunk

WINDOW_CHARS = 24_000
"""The fake provider's window, in characters of the request body."""

OPENAI_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 150000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC_TOO_LONG = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 208310 tokens > 200000 maximum",
    },
}
GEMINI_TOO_LONG = {
    "error": {
        "code": 400,
        "message": "The input token count (1250000) exceeds the maximum number of tokens "
        "allowed (1048576).",
        "status": "INVALID_ARGUMENT",
    }
}


def openai_answer() -> Reply:
    return Reply(
        events=[
            chat_chunk({"role": "assistant", "content": "fits"}),
            chat_chunk({}, "stop"),
            "[DONE]",
        ]
    )


def anthropic_answer() -> Reply:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-7",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return Reply(
        events=[
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "fits"},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def gemini_answer() -> Reply:
    chunk = {
        "candidates": [
            {
                "content": {"parts": [{"text": "fits"}], "role": "model"},
                "index": 0,
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
    }
    return Reply(events=[chunk])


class WindowedReplies:
    """Stands in for the reply queue: too long while the last request is over the window."""

    def __init__(self, server: ReplayServer, too_long: dict[str, Any], answer: Reply) -> None:
        self.server, self.too_long, self.answer = server, too_long, answer
        self.sizes: list[int] = []

    def popleft(self) -> Reply:
        size = len(json.dumps(self.server.requests[-1].body))
        self.sizes.append(size)
        if size > WINDOW_CHARS:
            return Reply(status=400, body=self.too_long)
        return self.answer

    def __bool__(self) -> bool:
        return True


def make_openai(server: ReplayServer) -> ChatModel:
    return OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key="sk-test", max_retries=0)


def make_anthropic(server: ReplayServer) -> ChatModel:
    return AnthropicModel("claude-opus-4-7", api_key="test", base_url=server.url, max_retries=0)


def make_gemini(server: ReplayServer) -> ChatModel:
    return GoogleModel("gemini-2.5-flash", api_key="test", base_url=server.url, max_retries=0)


PROVIDERS: dict[
    str, tuple[Callable[[ReplayServer], ChatModel], dict[str, Any], Callable[[], Reply]]
] = {
    "openai": (make_openai, OPENAI_TOO_LONG, openai_answer),
    "anthropic": (make_anthropic, ANTHROPIC_TOO_LONG, anthropic_answer),
    "gemini": (make_gemini, GEMINI_TOO_LONG, gemini_answer),
}


@pytest.fixture(params=sorted(PROVIDERS))
async def provider(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[ChatModel, WindowedReplies]]:
    make, too_long, answer = PROVIDERS[request.param]
    with ReplayServer() as server:
        replies = WindowedReplies(server, too_long, answer())
        server.replies = replies  # type: ignore[assignment]
        model = make(server)
        yield model, replies
        await model.aclose()


def long_turn(
    exchanges: int, output_chars: int, question: str = "Survey the repository."
) -> list[Message]:
    """One user question answered through ``exchanges`` tool calls with long outputs."""
    messages = [Message.text_message(question)]
    for n in range(exchanges):
        messages.append(
            Message(
                role="assistant", content=[ToolCallBlock(id=f"c{n}", name="read", args={"n": n})]
            )
        )
        body = f"file {n} starts\n" + "x" * output_chars + f"\nfile {n} ends"
        messages.append(Message.tool_message([ToolResultBlock(call_id=f"c{n}", output=body)]))
    return messages


async def test_a_long_single_turn_is_reduced_until_it_fits(
    provider: tuple[ChatModel, WindowedReplies],
) -> None:
    model, replies = provider
    turn = long_turn(exchanges=30, output_chars=3_000)
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=10))
    graph.add_node("agent", Agent(model, trim_context=True))
    graph.set_entry_point("agent")
    result = await graph.compile().ainvoke({"messages": turn})
    assert result["messages"][-1].text() == "fits"
    sizes = replies.sizes
    assert sizes[0] > WINDOW_CHARS >= sizes[-1]
    assert all(later < earlier for earlier, later in itertools.pairwise(sizes))
    assert 2 <= len(sizes) <= 13  # bounded: at most 12 reductions


async def test_outputs_are_shortened_before_exchanges_are_dropped(
    provider: tuple[ChatModel, WindowedReplies],
) -> None:
    model, replies = provider
    turn = long_turn(exchanges=4, output_chars=12_000)
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=10))
    graph.add_node("agent", Agent(model, trim_context=True))
    graph.set_entry_point("agent")
    app = graph.compile()
    result = await app.ainvoke({"messages": turn})
    assert result["messages"][-1].text() == "fits"
    last_request = json.dumps(model_request_body(replies))
    for n in range(4):  # every exchange is still there, shortened, start and end kept
        assert f"file {n} starts" in last_request and f"file {n} ends" in last_request
    assert "truncated from 12" in last_request


def model_request_body(replies: WindowedReplies) -> Any:
    return replies.server.requests[-1].body


async def test_an_irreducible_request_raises_naming_its_size(
    provider: tuple[ChatModel, WindowedReplies],
) -> None:
    model, replies = provider
    turn = long_turn(exchanges=3, output_chars=2_000, question="q" * 40_000)
    graph = StateGraph(AgentState, context_manager=MessageContextManager(max_messages=10))
    graph.add_node("agent", Agent(model, trim_context=True))
    graph.set_entry_point("agent")
    with pytest.raises(ContextWindowExceededError, match=r"nothing more can be removed") as caught:
        await graph.compile().ainvoke({"messages": turn})
    message = str(caught.value)
    assert "about 10" in message and "tokens" in message  # ~40,000 characters of question
    assert len(replies.sizes) <= 13
