"""``Message.from_file`` and ``offload_message`` with a media store (real stores)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import DocumentBlock, ImageBlock, MediaRef, TextBlock
from tenxgraph.errors import ConfigError, MediaTypeError
from tenxgraph.storage.media import MediaStore, aoffload_message, offload_message
from tests.storage.media.conftest import MakeMediaStore


@pytest.fixture
def store(make_media_store: MakeMediaStore) -> MediaStore:
    return make_media_store()


def test_from_file_streams_a_large_file_into_the_store(store: MediaStore, tmp_path: Path) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(300_000))
    message = Message.from_file(photo, "what is this?", media=store, user_id="acme")
    assert isinstance(message.content[0], TextBlock)
    block = message.content[1]
    assert isinstance(block, ImageBlock)
    ref = block.media
    assert ref.kind == "url" and ref.data_base64 is None
    assert (ref.mime_type, ref.filename, ref.size_bytes) == ("image/png", "photo.png", 300_008)
    assert store.get(ref, user_id="acme") == photo.read_bytes()
    assert len(message.model_dump_json()) < 1_000


def test_from_file_inlines_small_files_and_checks_the_type(
    store: MediaStore, tmp_path: Path
) -> None:
    note = tmp_path / "note.txt"
    note.write_text("short")
    small = Message.from_file(note, media=store)
    assert isinstance(small.content[0], DocumentBlock) and small.content[0].media.kind == "data"
    assert store.list_media() == []

    fake = tmp_path / "fake.png"
    fake.write_bytes(b"%PDF-1.7 " + bytes(100_000))
    with pytest.raises(MediaTypeError):
        Message.from_file(fake, media=store)
    assert store.list_media() == []


def test_from_file_without_a_store_still_refuses_files_over_the_inline_limit(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(2_000))
    with pytest.raises(ConfigError, match="media store"):
        Message.from_file(big, max_inline_bytes=1_000)


def test_offload_message_moves_large_inline_media_to_the_store(store: MediaStore) -> None:
    big = b"GIF89a" + os.urandom(100_000)
    small = b"GIF89a" + os.urandom(100)
    blocks = [
        ImageBlock(media=MediaRef(kind="data", data_base64=base64.b64encode(big).decode())),
        ImageBlock(media=MediaRef(kind="data", data_base64=base64.b64encode(small).decode())),
    ]
    built = Message.multimodal_message(blocks)
    message = offload_message(built, store, user_id="acme")
    first, second = message.content
    assert isinstance(first, ImageBlock) and first.media.kind == "url"
    assert first.media.mime_type == "image/gif"
    assert isinstance(second, ImageBlock) and second.media.kind == "data"
    assert store.get(first.media, user_id="acme") == big
    assert built.content[0].media.kind == "data"  # a copy: the message given is unchanged


async def test_aoffload_message_is_the_same_for_async_callers(store: MediaStore) -> None:
    big = b"GIF89a" + os.urandom(100_000)
    ref = MediaRef(kind="data", data_base64=base64.b64encode(big).decode())
    message = await aoffload_message(Message.multimodal_message([ImageBlock(media=ref)]), store)
    block = message.content[0]
    assert isinstance(block, ImageBlock) and block.media.kind == "url"
    assert await store.aget(block.media) == big


def test_multimodal_message_takes_no_store_and_says_where_offloading_went(
    store: MediaStore,
) -> None:
    with pytest.raises(ConfigError, match="offload_message"):
        Message.multimodal_message([TextBlock(text="hi")], media=store)


def test_invalid_base64_is_refused_where_the_ref_is_made() -> None:
    with pytest.raises(ValidationError, match="base64"):
        MediaRef(kind="data", data_base64="not base64!!", mime_type="image/png")
