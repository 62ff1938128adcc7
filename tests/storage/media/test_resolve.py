"""``graph://media/{key}`` URLs and their resolution into bytes for code that sends media on."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import (
    DataBlock,
    ImageBlock,
    MediaRef,
    TextBlock,
    ToolResultBlock,
    VideoBlock,
)
from tenxgraph.errors import InvalidMediaKeyError, MediaNotFoundError, MediaTooLargeError
from tenxgraph.storage.media import (
    MEDIA_URL_PREFIX,
    FilesystemMediaStore,
    ainline,
    in_media_store,
    inline,
    is_media_url,
    media_key,
    media_refs,
    media_url,
)
from tenxgraph.testing.media_stores import sample

KEY = hashlib.sha256(b"x").hexdigest()


def test_urls_and_keys_convert_both_ways() -> None:
    url = media_url(KEY)
    assert url == MEDIA_URL_PREFIX + KEY == f"graph://media/{KEY}"
    assert media_key(url) == media_key(KEY) == KEY
    assert media_key(MediaRef(kind="url", url=url)) == KEY
    assert is_media_url(url) and not is_media_url("https://example.com/x.png")
    assert not is_media_url(None)


@pytest.mark.parametrize(
    ("locator", "message"),
    [
        (KEY.upper(), "is not a media key"),
        (f"graph://media/{KEY}?user_id=bob", "nothing else"),
        (f"graph://media/{KEY}#x", "nothing else"),
        (f"graph://files/{KEY}", "is not a media URL"),
        ("graph://media/", "nothing else"),
        (f"graph://media/{KEY[:40]}/../{KEY[:20]}", "nothing else"),
        (f"{KEY}\n", "is not a media key"),
        (MediaRef(kind="data", data_base64="eA=="), "kind='data'"),
        (MediaRef(kind="url", url="https://example.com/cat.png"), "https://example.com"),
        (42, "must be a str, got int"),
    ],
)
def test_malformed_locators_say_what_was_wrong(locator: object, message: str) -> None:
    with pytest.raises(InvalidMediaKeyError, match=message.replace("?", r"\?")):
        media_key(locator)
    with pytest.raises(InvalidMediaKeyError):
        media_url(str(locator))


def test_media_refs_finds_every_ref_in_messages_and_blocks() -> None:
    image = MediaRef(kind="url", url=media_url(KEY), mime_type="image/png")
    video = MediaRef(kind="url", url="https://example.com/v.mp4")
    thumb = MediaRef(kind="file_id", file_id="file-1")
    data = MediaRef(kind="data", data_base64="eA==")
    nested = MediaRef(kind="url", url=media_url(KEY[::-1]))
    messages = [
        Message(role="user", content=[TextBlock(text="look"), ImageBlock(media=image)]),
        Message(role="user", content=[VideoBlock(media=video, thumbnail=thumb)]),
        Message(
            role="tool",
            content=[
                ToolResultBlock(call_id="c1", output=data),
                ToolResultBlock(call_id="c2", output=[ImageBlock(media=nested)]),
                ToolResultBlock(call_id="c3", output={"media": "not a ref"}),
            ],
        ),
    ]
    found = list(media_refs(messages))
    assert found == [image, video, thumb, data, nested]
    assert [ref for ref in found if in_media_store(ref)] == [image, nested]
    assert list(media_refs([DataBlock(mime_type="text/csv", media=thumb)])) == [thumb]


async def test_ainline_turns_a_stored_ref_into_inline_data(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", fsync=False)
    data = sample(4000)
    ref = await store.aput(data, "image/png", user_id="alice", filename="a.png")
    inlined = await ainline(store, ref, user_id="alice")
    assert inlined.kind == "data" and inlined.url is None
    assert base64.b64decode(inlined.data_base64 or "") == data
    assert (inlined.mime_type, inlined.filename, inlined.size_bytes) == ("image/png", "a.png", 4000)
    assert MediaRef.model_validate(inlined.model_dump()) == inlined  # a valid ref
    other = MediaRef(kind="url", url="https://example.com/cat.png")
    assert await ainline(store, other, user_id="alice") is other


async def test_ainline_checks_the_tenant_and_the_limit_before_reading(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", fsync=False)
    ref = await store.aput(sample(4000), "image/png", user_id="alice")
    with pytest.raises(MediaNotFoundError, match="for user_id 'bob'"):
        await ainline(store, ref, user_id="bob")
    with pytest.raises(MediaTooLargeError, match=r"4000 bytes, over the 3999-byte limit"):
        await ainline(store, ref, user_id="alice", max_bytes=3999)


def test_inline_is_the_sync_twin(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", fsync=False)
    ref = store.put(b"%PDF-1.7 tiny", "application/pdf")
    assert inline(store, ref).data_base64 == base64.b64encode(b"%PDF-1.7 tiny").decode()
