"""Every block kind round-trips through JSON; arbitrary JSON yields only validation errors."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tenxgraph.core.state import Message, MessagesAdapter, TokenUsages
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    RemoteToolCallBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    VideoBlock,
)


def every_block_kind() -> list[Message]:
    url = MediaRef(kind="url", url="https://example.com/photo.jpg", mime_type="image/jpeg")
    return [
        Message(
            role="user",
            content=[
                TextBlock(
                    text="See reference [1].",
                    annotations=[AnnotationRef(url="https://example.com", title="Source")],
                ),
                ImageBlock(media=url),
                ImageBlock(
                    media=MediaRef(kind="file_id", file_id="file-abc123", mime_type="image/png")
                ),
                ImageBlock(
                    media=MediaRef(kind="data", data_base64="aGVsbG8=", mime_type="image/png"),
                    alt_text="Chart",
                    bbox=[0.0, 1.0, 2.5, 3.0],
                ),
                AudioBlock(
                    media=MediaRef(kind="url", url="https://example.com/recording.mp3"),
                    transcript="Hello, this is a recording.",
                    sample_rate=16000,
                    channels=1,
                ),
                VideoBlock(
                    media=MediaRef(kind="url", url="https://example.com/video.mp4"),
                    thumbnail=MediaRef(kind="url", url="https://example.com/thumb.jpg"),
                ),
                DocumentBlock(
                    media=MediaRef(
                        kind="file_id", file_id="file-def456", mime_type="application/pdf"
                    ),
                    excerpt="This report covers Q4 earnings...",
                    pages=[1, 2, 3],
                ),
                DataBlock(mime_type="application/json", data_base64="eyJrZXkiOiAidmFsdWUifQ=="),
            ],
            metadata={"source": "api", "n": [1, 2]},
        ),
        Message(
            role="assistant",
            content=[
                ReasoningBlock(summary="think", details=["a", "b"]),
                ToolCallBlock(id="call_abc", name="get_weather", args={"location": "London"}),
                RemoteToolCallBlock(id="r1", name="browser_alert", args={"x": 1}),
                AnnotationBlock(
                    kind="note",
                    refs=[AnnotationRef(url="https://arxiv.org/abs/2303.08774", page=1)],
                    spans=[(0, 4)],
                ),
            ],
            usages=TokenUsages(completion_tokens=150, prompt_tokens=320, total_tokens=470),
            raw={"id": "resp_1"},
            tools_calls=[{"id": "call_abc", "type": "function"}],
            parsed_content={"answer": 42},
            reasoning="old-style trace",
        ),
        Message(
            role="tool",
            content=[
                ToolResultBlock(
                    call_id="call_abc",
                    output={"order_id": "A1001", "status": "shipped"},
                    is_error=False,
                    status="completed",
                ),
                ToolResultBlock(call_id="r1", output=MediaRef(kind="url", url="https://x/y")),
                ToolResultBlock(call_id="r2", output=[TextBlock(text="nested")], is_error=True),
                ErrorBlock(message="boom", code="E1", data={"retry": False}),
            ],
        ),
    ]


def test_every_block_kind_round_trips() -> None:
    messages = every_block_kind()
    kinds = {block.type for message in messages for block in message.content}
    assert len(kinds) == 12
    restored = MessagesAdapter.validate_json(MessagesAdapter.dump_json(messages))
    assert restored == messages
    assert isinstance(restored[2].content[1].output, MediaRef)  # type: ignore[union-attr]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
block_types = st.sampled_from(
    ["text", "image", "tool_call", "tool_result", "reasoning", "error", "data", "bogus"]
)
blockish = st.fixed_dictionaries(
    {"type": block_types},
    optional={
        "text": json_values,
        "id": json_values,
        "name": json_values,
        "call_id": json_values,
        "output": json_values,
        "summary": json_values,
        "message": json_values,
        "mime_type": json_values,
        "media": st.fixed_dictionaries(
            {"kind": st.sampled_from(["url", "file_id", "data", "x"])},
            optional={"url": json_values, "file_id": json_values, "data_base64": json_values},
        ),
    },
)
messageish = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["user", "assistant", "system", "tool", "robot"]) | json_values,
        "content": st.lists(blockish, max_size=4) | json_values,
        "message_id": json_values,
        "metadata": json_values,
        "delta": json_values,
        "timestamp": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(messageish)
def test_arbitrary_json_gives_only_validation_errors(payload: dict[str, Any]) -> None:
    try:
        message = Message.model_validate(payload)
    except ValidationError:
        return
    dumped = message.model_dump_json()
    assert Message.model_validate_json(dumped) == message
    assert json.loads(dumped)["role"] == message.role
