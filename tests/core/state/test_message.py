from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from tenxgraph.core.state import (
    MAX_INLINE_BYTES,
    ImageBlock,
    MediaRef,
    Message,
    TextBlock,
    ToolResultBlock,
    new_message_id,
)
from tenxgraph.core.state.message import TokenUsages
from tenxgraph.core.state.message_block import (
    AudioBlock,
    DataBlock,
    DocumentBlock,
    ToolCallBlock,
    VideoBlock,
)


def test_spec_create_messages_snippet() -> None:
    # 000 "Create messages", as written
    msg = Message.text_message("Hello!")
    assert msg.role == "user"
    assert msg.text() == "Hello!"

    msg = Message.tool_message(
        content=[ToolResultBlock(call_id="call_123", output="Sunny, 22C", status="completed")],
    )
    assert msg.role == "tool"
    assert msg.text() == "Sunny, 22C"

    msg = Message(
        role="user",
        content=[
            TextBlock(text="What is this?"),
            ImageBlock(
                media=MediaRef(kind="url", url="https://example.com/img.png", mime_type="image/png")
            ),
        ],
    )
    assert [b.type for b in msg.content] == ["text", "image"]


def test_spec_text_message_variants() -> None:
    # 002 "Message.text_message"
    assert Message.text_message("Hello").role == "user"
    assert Message.text_message("Hello", role="assistant").role == "assistant"
    msg = Message.text_message("Hello", role="user", message_id="msg-001")
    assert msg.message_id == "msg-001"

    direct = Message(
        role="user", content=[TextBlock(text="Hello, world!")], metadata={"source": "api"}
    )
    assert direct.metadata == {"source": "api"}


def test_defaults_match_the_reference() -> None:
    before = time.time()
    msg = Message(role="assistant", content=[])
    assert msg.delta is False
    assert msg.tools_calls is None
    assert msg.reasoning is None
    assert msg.metadata == {}
    assert msg.usages is None
    assert msg.raw is None
    assert msg.parsed_content is None
    assert msg.timestamp is not None and before <= msg.timestamp <= time.time()
    assert isinstance(msg.message_id, str) and msg.message_id


def test_ids_are_unique_and_int_ids_allowed() -> None:
    ids = {new_message_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(len(i) == 32 and set(i) <= set("0123456789abcdef") for i in ids)
    assert any(i.startswith("0") for i in ids)  # leading zeros kept: always 32 digits
    assert Message.text_message("x", message_id=7).message_id == 7


def test_text_concatenates_text_and_tool_output_only() -> None:
    msg = Message(
        role="tool",
        content=[
            TextBlock(text="a"),
            ToolCallBlock(id="c", name="f", args={}),
            ToolResultBlock(call_id="c", output="b"),
            ToolResultBlock(call_id="d", output={"k": 1}),
            ImageBlock(media=MediaRef(kind="url", url="https://x/y.png")),
        ],
    )
    assert msg.text() == 'ab{"k": 1}'


def test_image_and_multimodal_constructors() -> None:
    msg = Message.image_message("https://example.com/cat.jpg", text="What is it?")
    assert isinstance(msg.content[0], TextBlock)
    image = msg.content[1]
    assert isinstance(image, ImageBlock)
    assert image.media.mime_type == "image/jpeg"

    msg = Message.multimodal_message(
        [TextBlock(text="hi"), AudioBlock(media=MediaRef(kind="file_id", file_id="f1"))],
        role="assistant",
    )
    assert msg.role == "assistant"
    assert [b.type for b in msg.content] == ["text", "audio"]


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.mark.parametrize(
    ("name", "data", "block_type", "mime"),
    [
        ("pic.png", PNG, ImageBlock, "image/png"),
        ("noext", PNG, ImageBlock, "image/png"),
        ("report.pdf", b"%PDF-1.4 ...", DocumentBlock, "application/pdf"),
        ("notes.txt", b"hello", DocumentBlock, "text/plain"),
        ("song.mp3", b"ID3....", AudioBlock, "audio/mpeg"),
        ("clip.mp4", b"\x00\x00\x00\x18ftypmp42", VideoBlock, "video/mp4"),
        ("blob.bin", b"\xff\x00\xfe", DataBlock, "application/octet-stream"),
    ],
)
def test_from_file_detects_kind(
    tmp_path: Path, name: str, data: bytes, block_type: type[BaseModel], mime: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    msg = Message.from_file(path, text="look")
    block = msg.content[-1]
    assert isinstance(block, block_type)
    media = block.media  # type: ignore[attr-defined]
    assert media.mime_type == mime
    assert base64.b64decode(media.data_base64) == data
    assert media.size_bytes == len(data)
    assert media.filename == name


def test_from_file_refuses_large_files(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    path.write_bytes(PNG + b"\x00" * 100)
    with pytest.raises(ValueError, match="above the inline limit of 64 bytes"):
        Message.from_file(path, max_inline_bytes=64)
    assert MAX_INLINE_BYTES == 5 * 1024 * 1024


def test_token_usages_defaults() -> None:
    usages = TokenUsages(completion_tokens=150, prompt_tokens=320, total_tokens=470)
    assert usages.reasoning_tokens == 0
    assert usages.cache_creation_input_tokens == 0
    assert usages.cache_read_input_tokens == 0
    assert usages.image_tokens == 0
    assert usages.audio_tokens == 0


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"role": "robot", "content": []}, "role"),
        ({"role": "user", "content": [{"type": "hologram"}]}, "content.0"),
        ({"role": "assistant", "content": [{"type": "tool_call", "name": "f"}]}, "id"),
        (
            {
                "role": "user",
                "content": [
                    {"type": "image", "media": {"kind": "data", "data_base64": "not base64!!"}}
                ],
            },
            "data_base64",
        ),
        ({"role": "user", "content": [], "metadata": {"f": object()}}, "metadata"),
        ({"role": "user", "content": [{"type": "image", "media": {"kind": "url"}}]}, "url"),
    ],
)
def test_bad_input_names_the_field(payload: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Message.model_validate(payload)
    assert field in str(info.value)


def test_media_ref_requires_the_field_of_its_kind() -> None:
    with pytest.raises(ValidationError, match="file_id"):
        MediaRef(kind="file_id")
    assert MediaRef(kind="data", data_base64="aGk=").data_base64 == "aGk="
