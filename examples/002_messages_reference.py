"""The messages API: constructors, every content block, MediaRef, TokenUsages.

Run: python examples/002_messages_reference.py
"""

from tenxgraph.core.state import Message
from tenxgraph.core.state.message import TokenUsages
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    AudioBlock,
    ContentBlock,
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

# Constructors
msg = Message.text_message("Hello")
msg = Message.text_message("Hello", role="assistant")
msg = Message.text_message("Hello", role="user", message_id="msg-001")
print("text_message:", msg.message_id, msg.role, msg.text())

# Direct construction
msg = Message(
    role="user",
    content=[TextBlock(text="Hello, world!")],
    metadata={"source": "api"},
)
print("direct:", msg.text(), msg.metadata)

# Content blocks
blocks: list[ContentBlock] = [
    TextBlock(text="Hello, world!"),
    TextBlock(
        text="See reference [1].",
        annotations=[AnnotationRef(url="https://example.com", title="Source")],
    ),
    ImageBlock(
        media=MediaRef(kind="url", url="https://example.com/photo.jpg", mime_type="image/jpeg")
    ),
    ImageBlock(media=MediaRef(kind="file_id", file_id="file-abc123", mime_type="image/png")),
    ImageBlock(
        media=MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png"),
        alt_text="Chart",
    ),
    AudioBlock(
        media=MediaRef(kind="url", url="https://example.com/recording.mp3"),
        transcript="Hello, this is a recording.",
    ),
    VideoBlock(
        media=MediaRef(kind="url", url="https://example.com/video.mp4"),
        thumbnail=MediaRef(kind="url", url="https://example.com/thumb.jpg"),
    ),
    DocumentBlock(
        media=MediaRef(kind="file_id", file_id="file-def456", mime_type="application/pdf"),
        excerpt="This report covers Q4 earnings...",
        pages=[1, 2, 3],
    ),
    DataBlock(mime_type="application/json", data_base64="eyJrZXkiOiAidmFsdWUifQ=="),
    ToolCallBlock(id="call_abc", name="get_weather", args={"location": "London"}),
    RemoteToolCallBlock(id="call_r1", name="pick_file", args={}),
    ToolResultBlock(
        call_id="call_abc", output={"order_id": "A1001", "status": "shipped"}, is_error=False
    ),
    ReasoningBlock(summary="Compared the two options", details=["cost", "speed"]),
    AnnotationBlock(
        refs=[
            AnnotationRef(
                url="https://arxiv.org/abs/2303.08774", title="GPT-4 Technical Report", page=1
            )
        ]
    ),
    ErrorBlock(message="Rate limited", code="429"),
]
for block in blocks:
    print(f"{block.type:>16}: {block.model_dump(exclude_defaults=True, exclude={'type'})}")

# MediaRef kinds
MediaRef(kind="url", url="https://cdn.example.com/image.png", mime_type="image/png")
MediaRef(kind="file_id", file_id="file-abc123", mime_type="image/png")
MediaRef(kind="data", data_base64="iVBORw0KGgo=", mime_type="image/png")

# TokenUsages
usages = TokenUsages(
    completion_tokens=150,
    prompt_tokens=320,
    total_tokens=470,
)
print("usages:", usages.total_tokens, "total,", usages.reasoning_tokens, "reasoning")

# Everything round-trips through JSON.
msg = Message(role="assistant", content=blocks, usages=usages)
assert Message.model_validate_json(msg.model_dump_json()) == msg
print("round trip: ok,", len(msg.content), "blocks")
