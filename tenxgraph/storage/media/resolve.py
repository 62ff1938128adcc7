"""Turning ``graph://media/{key}`` references back into bytes, for code that sends media on.

A ``graph://`` URL means nothing to a provider: before a request, an
adapter finds the media refs of its messages (``media_refs``), and for each
one in a media store either inlines it (``ainline``: a ``kind="data"`` ref
with the base64 of the bytes) or streams it to the provider's file API
(``MediaStore.aopen``). Refs of other kinds (an ``https://`` URL, a provider
``file_id``, inline data) are left as they are.

Resolution always names the tenant: the ``user_id`` of the thread the
messages belong to. A ref copied into another tenant's thread does not
resolve (``MediaNotFoundError``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator

from tenxgraph._sync import run_sync
from tenxgraph.core.state.ids import DEFAULT_USER
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import MediaRef
from tenxgraph.errors import MediaTooLargeError
from tenxgraph.storage.media._keys import is_media_url, media_key
from tenxgraph.storage.media.base import MediaStore, not_found

__all__ = ["ainline", "in_media_store", "inline", "media_refs"]


def in_media_store(ref: MediaRef) -> bool:
    """True for a ref whose url is ``graph://media/...`` (the ones a store resolves)."""
    return ref.kind == "url" and is_media_url(ref.url)


def media_refs(items: Iterable[Message | object]) -> Iterator[MediaRef]:
    """Every ``MediaRef`` in messages or content blocks, in order, nested ones included.

    Looks in image, audio, video (and its thumbnail), document and data
    blocks, and in tool results whose output is a ref or a list of blocks.
    """
    for item in items:
        if isinstance(item, Message):
            yield from media_refs(item.content)
        elif isinstance(item, MediaRef):
            yield item
        else:
            for name in ("media", "thumbnail"):
                ref = getattr(item, name, None)
                if isinstance(ref, MediaRef):
                    yield ref
            output = getattr(item, "output", None)
            if isinstance(output, MediaRef):
                yield output
            elif isinstance(output, list):
                yield from media_refs(output)


async def ainline(
    store: MediaStore,
    ref: MediaRef,
    *,
    user_id: str = DEFAULT_USER,
    max_bytes: int | None = None,
) -> MediaRef:
    """``ref`` with its media-store bytes inline (``kind="data"``); other refs unchanged.

    The other fields (``mime_type``, ``filename``, sizes...) are kept.
    ``max_bytes`` (a provider's inline limit) is checked against the stored
    size before anything is read: ``MediaTooLargeError`` names both.
    """
    if not in_media_store(ref):
        return ref
    info = await store.ainfo(ref, user_id=user_id)
    if info is None:
        raise not_found(user_id, media_key(ref))
    if max_bytes is not None and info.size > max_bytes:
        raise MediaTooLargeError(
            f"media {ref.url} is {info.size} bytes, over the {max_bytes}-byte limit for "
            "inline media"
        )
    data = await store.aget(ref, user_id=user_id)
    return ref.model_copy(
        update={
            "kind": "data",
            "url": None,
            "data_base64": base64.b64encode(data).decode("ascii"),
            "mime_type": ref.mime_type or info.mime_type,
            "size_bytes": info.size,
            "sha256": info.key,
        }
    )


def inline(
    store: MediaStore,
    ref: MediaRef,
    *,
    user_id: str = DEFAULT_USER,
    max_bytes: int | None = None,
) -> MediaRef:
    """Sync ``ainline``."""
    return run_sync(ainline(store, ref, user_id=user_id, max_bytes=max_bytes))
