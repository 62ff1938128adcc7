"""Truncated tool-call arguments, through every adapter's official SDK and the real agent loop.

Each provider's replay server answers first with a call of ``delete_files``
whose arguments were cut off (``{"pattern": "tmp/*.lo``), then with text. The
tool, whose ``pattern`` defaults to ``*``, must never run; the model must get
an error result quoting the problem, and see its call and that result next.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm._convert_openai import chat_params
from tenxgraph.core.llm.anthropic import AnthropicModel
from tenxgraph.core.llm.base import ChatModel, ModelRequest
from tenxgraph.core.llm.google import GoogleModel
from tenxgraph.core.llm.openai import OpenAIChatModel
from tenxgraph.core.llm.openai_responses import OpenAIResponsesModel
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ToolCallBlock, ToolResultBlock
from tenxgraph.testing.replay import ReplayServer, chat_chunk

CUT = '{"pattern": "tmp/*.lo'
"""The arguments as a truncated answer left them."""


# --- OpenAI Chat Completions ---------------------------------------------------------------


def _chat_call(server: ReplayServer, arguments: str) -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "delete_files"}}
    server.stream(
        [
            chat_chunk({"role": "assistant", "tool_calls": [call]}),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            chat_chunk({}, finish="length"),
            "[DONE]",
        ]
    )


def _chat_text(server: ReplayServer) -> None:
    server.stream([chat_chunk({"content": "Sorry."}, finish="stop"), "[DONE]"])


def _chat_sent(body: dict[str, Any]) -> tuple[Any, str]:
    messages = body["messages"]
    call = messages[1]["tool_calls"][0]
    assert messages[2]["role"] == "tool"
    assert messages[2]["tool_call_id"] == call["id"]
    return call["id"], messages[2]["content"]


# --- OpenAI Responses ----------------------------------------------------------------------


def _responses_body(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "model": "gpt-5.1",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
        "metadata": {},
    }


def _responses_call(server: ReplayServer, arguments: str) -> None:
    call = {
        "id": "fc_1",
        "type": "function_call",
        "status": "incomplete",
        "call_id": "call_1",
        "name": "delete_files",
        "arguments": arguments,
    }
    events: list[Any] = [
        ("response.created", _responses_body("in_progress", [])),
        ("response.output_item.added", {"output_index": 0, "item": {**call, "arguments": ""}}),
        (
            "response.function_call_arguments.delta",
            {"item_id": "fc_1", "output_index": 0, "delta": arguments},
        ),
        ("response.incomplete", {"response": _responses_body("incomplete", [call])}),
    ]
    server.stream(_numbered(events))


def _responses_text(server: ReplayServer) -> None:
    item = {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Sorry.", "annotations": []}],
    }
    server.stream(
        _numbered([("response.completed", {"response": _responses_body("completed", [item])})])
    )


def _numbered(events: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    out: list[Any] = []
    for number, (kind, payload) in enumerate(events):
        if kind == "response.created":
            payload = {"response": payload}
        out.append((kind, {"type": kind, "sequence_number": number, **payload}))
    return out


def _responses_sent(body: dict[str, Any]) -> tuple[Any, str]:
    items = body["input"]
    call, result = items[1], items[2]
    assert call["type"] == "function_call"
    assert result["type"] == "function_call_output"
    assert result["call_id"] == call["call_id"]
    return call["call_id"], result["output"]


# --- Anthropic -----------------------------------------------------------------------------


def _anthropic_start() -> tuple[str, dict[str, Any]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return ("message_start", {"type": "message_start", "message": message})


def _anthropic_end(stop_reason: str) -> list[tuple[str, dict[str, Any]]]:
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 20},
    }
    return [("message_delta", delta), ("message_stop", {"type": "message_stop"})]


def _anthropic_call(server: ReplayServer, arguments: str) -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "delete_files", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": arguments}
    server.stream(
        [
            _anthropic_start(),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            *_anthropic_end("max_tokens"),
        ]
    )


def _anthropic_text(server: ReplayServer) -> None:
    text = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": "Sorry."}
    server.stream(
        [
            _anthropic_start(),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": text},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            *_anthropic_end("end_turn"),
        ]
    )


def _anthropic_sent(body: dict[str, Any]) -> tuple[Any, str]:
    call = body["messages"][1]["content"][0]
    result = body["messages"][2]["content"][0]
    assert call["type"] == "tool_use"
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == call["id"]
    assert result["is_error"] is True
    content = result["content"]
    return call["id"], content if isinstance(content, str) else content[0]["text"]


# --- Google ---------------------------------------------------------------------------------


def _google_chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-test"}


def _google_call(server: ReplayServer, arguments: str) -> None:
    """Vertex AI streams arguments by JSON path; the stream stops mid-call (MAX_TOKENS)."""
    del arguments  # Gemini sends decoded pieces, not JSON text: the cut is in the stream
    partial = {"jsonPath": "$.pattern", "stringValue": "tmp/*.lo", "willContinue": True}
    head = {"functionCall": {"id": "fc-1", "name": "delete_files", "willContinue": True}}
    piece = {"functionCall": {"partialArgs": [partial], "willContinue": True}}
    server.stream([_google_chunk([head]), _google_chunk([piece], finish="MAX_TOKENS")])


def _google_text(server: ReplayServer) -> None:
    server.stream([_google_chunk([{"text": "Sorry."}], finish="STOP")])


def _google_sent(body: dict[str, Any]) -> tuple[Any, str]:
    call = body["contents"][1]["parts"][0]["functionCall"]
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == call["name"]
    return call.get("id"), json.dumps(response["response"])


# --- the shared scenario ----------------------------------------------------------------------


@dataclass
class Provider:
    name: str
    make: Callable[[str], ChatModel]
    call: Callable[[ReplayServer, str], None]
    text: Callable[[ReplayServer], None]
    sent: Callable[[dict[str, Any]], tuple[Any, str]]
    quoted: str
    """What of the cut-off arguments the error result must quote."""


PROVIDERS = [
    Provider(
        "openai-chat",
        lambda url: OpenAIChatModel("gpt-test", base_url=url + "/v1", api_key="k", max_retries=0),
        _chat_call,
        _chat_text,
        _chat_sent,
        CUT,
    ),
    Provider(
        "openai-responses",
        lambda url: OpenAIResponsesModel(
            "gpt-5.1", api_key="k", base_url=url + "/v1", max_retries=0
        ),
        _responses_call,
        _responses_text,
        _responses_sent,
        CUT,
    ),
    Provider(
        "anthropic",
        lambda url: AnthropicModel("claude-test", api_key="k", base_url=url, max_retries=0),
        _anthropic_call,
        _anthropic_text,
        _anthropic_sent,
        CUT,
    ),
    Provider(
        "google",
        lambda url: GoogleModel("gemini-test", api_key="k", base_url=url, max_retries=0),
        _google_call,
        _google_text,
        _google_sent,
        "tmp/*.lo",
    ),
]


async def _run(
    server: ReplayServer, provider: Provider, arguments: str
) -> tuple[list[str], list[Message]]:
    ran: list[str] = []

    def delete_files(pattern: str = "*") -> str:
        """Delete the files matching ``pattern``."""
        ran.append(pattern)
        return f"deleted {pattern}"

    provider.call(server, arguments)
    provider.text(server)
    model = provider.make(server.url)
    try:
        app = create_agent(model, [delete_files])
        result = await app.ainvoke({"messages": [Message.text_message("clean tmp")]})
    finally:
        close: Callable[[], Awaitable[None]] | None = getattr(model, "aclose", None)
        if close is not None:
            await close()
    return ran, result["messages"]


@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])
async def test_cut_off_arguments_never_run_the_tool_and_the_model_is_told(
    server: ReplayServer, provider: Provider
) -> None:
    ran, history = await _run(server, provider, CUT)

    assert ran == []  # delete_files(pattern='*') must not have run
    asked, answered, final = history[-3:]
    [call] = asked.tool_calls()
    assert call == ToolCallBlock(id=call.id, name="delete_files", args={})
    refused = asked.metadata["invalid_tool_args"][call.id]
    assert provider.quoted in refused["arguments"]
    [result] = answered.tool_results()
    assert isinstance(result, ToolResultBlock)
    assert (result.call_id, result.is_error, result.status) == (call.id, True, "failed")
    assert isinstance(result.output, str)
    assert result.output.startswith("tool 'delete_files' was not run: ")
    assert refused["error"] in result.output
    assert provider.quoted in result.output
    assert final.text() == "Sorry."

    assert len(server.requests) == 2
    sent_id, sent_result = provider.sent(server.requests[1].body)
    assert sent_id in (call.id, None)  # Gemini calls without an id are matched by name
    assert "was not run" in sent_result
    assert provider.quoted.replace('"', "") in sent_result.replace('\\"', "").replace('"', "")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("[1, 2]", "the arguments are an array, not a JSON object"),
        ('"x"', "the arguments are a string, not a JSON object"),
        ('{"pattern": NaN}', "NaN is not a JSON number"),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS[:3], ids=[p.name for p in PROVIDERS[:3]])
async def test_arguments_that_are_not_a_json_object_are_refused_the_same_way(
    server: ReplayServer, provider: Provider, arguments: str, problem: str
) -> None:
    ran, history = await _run(server, provider, arguments)

    assert ran == []
    [result] = history[-2].tool_results()
    assert result.is_error
    assert isinstance(result.output, str)
    assert problem in result.output
    assert repr(arguments) in result.output


class _CutFirstAnswer(ChatModel):
    """The real local model for the first call, cut off after 5 tokens; a fixed text after.

    The second request is what llama.cpp would be sent next; it is kept to be read.
    """

    def __init__(self, local: ChatModel) -> None:
        self.local = local
        self.model = "smollm2"
        self.provider = "local"
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[Message]:
        self.requests.append(request)
        if len(self.requests) == 1:
            async for message in self.local.stream(replace(request, max_tokens=5)):
                yield message
        else:
            yield Message.text_message("Sorry.", role="assistant")


@pytest.mark.local_model
async def test_the_real_local_model_cut_off_mid_call_does_not_run_the_tool() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    from tenxgraph.core.llm.local import LocalLlamaModel

    ran: list[str] = []

    def delete_files(pattern: str = "*") -> str:
        """Delete the files matching ``pattern``."""
        ran.append(pattern)
        return f"deleted {pattern}"

    model = _CutFirstAnswer(LocalLlamaModel(n_ctx=512, temperature=0.0))
    app = create_agent(model, [delete_files], tool_choice="delete_files")
    result = await app.ainvoke({"messages": [Message.text_message("Delete the logs in tmp")]})

    assert ran == []
    asked, answered, _ = result["messages"][-3:]
    [call] = asked.tool_calls()
    refused = asked.metadata["invalid_tool_args"][call.id]
    assert refused["error"].startswith("the arguments are not valid JSON")
    [outcome] = answered.tool_results()
    assert outcome.is_error
    assert isinstance(outcome.output, str)
    assert repr(refused["arguments"]) in outcome.output
    wire = chat_params(model.requests[1], provider="local", strings_only=True)["messages"]
    assert wire[-2]["tool_calls"][0]["id"] == call.id
    assert wire[-1] == {"role": "tool", "tool_call_id": call.id, "content": outcome.output}
