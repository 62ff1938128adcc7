"""Offloading: large inline media moved into a media store before a message is stored.

A checkpointer given a media store (``media=``) passes the new messages of
every save through ``aoffload``: each ``MediaRef(kind="data")`` whose bytes
are over the threshold is put in the store (content-addressed: the same
bytes are stored once per tenant) and replaced by its
``graph://media/{key}`` ref, keeping its type, file name and the other
fields. The stored rows then hold a ~200-byte reference instead of the
base64. This runs before the save's transaction, never inside it: a put may
take long, and the database's write lock is not held meanwhile.

The messages given are not changed (messages are treated as values): the
offloaded copies are returned, with the bytes put, so the save can check
afterwards that garbage collection did not remove them in between
(``arestore``; see ``gc``).

``offload_message`` (``aoffload_message``) does the same to one message
outside a save, with a store's default threshold: how a message built with
``Message.multimodal_message`` gets its large media into a store before it
is sent anywhere.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from tenxgraph._sync import run_sync
from tenxgraph.core.state.ids import DEFAULT_USER
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, MediaRef
from tenxgraph.errors import ConfigError, MediaTypeError
from tenxgraph.storage.media._keys import media_key
from tenxgraph.storage.media.base import MediaStore

__all__ = [
    "DEFAULT_GRACE",
    "DEFAULT_OFFLOAD_BYTES",
    "MediaPolicy",
    "Offloaded",
    "aoffload",
    "aoffload_message",
    "offload_message",
]

logger = logging.getLogger("tenxgraph.storage.media")

DEFAULT_OFFLOAD_BYTES = 64 * 1024
"""Inline media larger than this (64 KiB of bytes, ~87 KB of base64) goes to the store."""

DEFAULT_GRACE = 3600.0
"""Seconds an unreferenced object is kept after its put before garbage collection may
delete it: a save that put it may not have committed its message yet."""


@dataclass(frozen=True, slots=True)
class MediaPolicy:
    """A checkpointer's media store and how it uses it (``media=`` takes this or a store).

    ``offload_bytes``: inline media above this many bytes is moved to the
    store on save (0: all inline media). ``grace``: seconds after its put an
    unreferenced object is kept from deletion (see ``tenxgraph.storage.media.gc``).
    ``release_on_delete``: deleting a thread deletes the media only it referenced.
    """

    store: MediaStore
    offload_bytes: int = DEFAULT_OFFLOAD_BYTES
    grace: float = DEFAULT_GRACE
    release_on_delete: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.store, MediaStore):
            raise ConfigError(f"media must be a MediaStore, got {type(self.store).__name__}")
        if type(self.offload_bytes) is not int or self.offload_bytes < 0:
            raise ConfigError(f"offload_bytes must be an int >= 0, got {self.offload_bytes!r}")
        if not self.grace >= 0:
            raise ConfigError(f"grace must be >= 0 seconds, got {self.grace!r}")

    @classmethod
    def of(cls, media: MediaStore | MediaPolicy | None) -> MediaPolicy | None:
        """The policy a checkpointer's ``media=`` option names (a bare store: the defaults)."""
        if media is None or isinstance(media, MediaPolicy):
            return media
        return cls(media)


@dataclass(slots=True)
class Offloaded:
    """The result of ``aoffload``: the messages to store and what was put for them."""

    messages: list[Message]
    puts: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    """key -> (bytes, mime type) of every object put, for ``arestore``."""

    async def arestore(self, store: MediaStore, user_id: str) -> int:
        """Put again any object deleted since (a gc that raced the save); return how many.

        Called after the save committed: the messages now reference the keys,
        so a gc from now on keeps them, and one that ran in between is undone.
        """
        restored = 0
        for key, (data, mime_type) in self.puts.items():
            if not await store.aexists(key, user_id=user_id):
                await store.aput(data, mime_type, user_id=user_id)
                restored += 1
        if restored:
            logger.warning("%d offloaded media deleted by a concurrent gc were put back", restored)
        return restored


async def aoffload(policy: MediaPolicy, messages: Sequence[Message], *, user_id: str) -> Offloaded:
    """Copies of ``messages`` whose inline media over the threshold are in ``policy.store``."""
    result = Offloaded(list(messages))
    for index, message in enumerate(messages):
        if not any(_is_large(ref, policy.offload_bytes) for ref in _refs_of(message.content)):
            continue
        replacements: dict[int, MediaRef] = {}
        for ref in _refs_of(message.content):
            if _is_large(ref, policy.offload_bytes) and id(ref) not in replacements:
                replacements[id(ref)] = await _put(policy.store, ref, user_id, result)
        content = _map_refs(message.content, replacements)
        result.messages[index] = message.model_copy(update={"content": content})
    return result


async def aoffload_message(
    message: Message, media: MediaStore | MediaPolicy, *, user_id: str = DEFAULT_USER
) -> Message:
    """A copy of ``message`` whose inline media over the threshold are in the store.

    ``media``: a store (the default threshold, 64 KiB) or a ``MediaPolicy``.
    The media go to ``user_id``'s space and are referenced as
    ``graph://media/{key}``, as a checkpointer with ``media=`` does on save;
    smaller inline media stay inline. ``message`` itself is not changed.
    """
    policy = media if isinstance(media, MediaPolicy) else MediaPolicy(media)
    done = await aoffload(policy, [message], user_id=user_id)
    return done.messages[0]


def offload_message(
    message: Message, media: MediaStore | MediaPolicy, *, user_id: str = DEFAULT_USER
) -> Message:
    """Sync ``aoffload_message``."""
    return run_sync(aoffload_message(message, media, user_id=user_id))


def _is_large(ref: MediaRef, threshold: int) -> bool:
    """Inline data over ``threshold`` bytes (judged from the base64 length: no decoding)."""
    return ref.kind == "data" and len(ref.data_base64 or "") * 3 // 4 > threshold


async def _put(store: MediaStore, ref: MediaRef, user_id: str, result: Offloaded) -> MediaRef:
    data = base64.b64decode(ref.data_base64 or "")
    try:
        stored = await store.aput(data, ref.mime_type, user_id=user_id, filename=ref.filename)
    except MediaTypeError as error:
        # A wrong declared type must not make the thread unsavable: store what the bytes are.
        logger.warning("offloading media with its detected type: %s", error)
        stored = await store.aput(data, None, user_id=user_id, filename=ref.filename)
    result.puts[media_key(stored)] = (data, stored.mime_type or "application/octet-stream")
    return ref.model_copy(
        update={
            "kind": "url",
            "url": stored.url,
            "data_base64": None,
            "mime_type": stored.mime_type,
            "size_bytes": stored.size_bytes,
            "sha256": stored.sha256,
        }
    )


def _refs_of(blocks: Sequence[object]) -> list[MediaRef]:
    """The media refs of ``blocks``, nested ones (tool result outputs) included."""
    from tenxgraph.storage.media.resolve import media_refs

    return list(media_refs(blocks))


def _map_refs(blocks: Sequence[ContentBlock], replace: dict[int, MediaRef]) -> list[ContentBlock]:
    """``blocks`` with each media ref whose id is in ``replace`` replaced (blocks copied)."""
    mapped: list[ContentBlock] = []
    for block in blocks:
        update: dict[str, object] = {}
        for name in ("media", "thumbnail"):
            ref = getattr(block, name, None)
            if isinstance(ref, MediaRef):
                update[name] = replace.get(id(ref), ref)
        output = getattr(block, "output", None)
        if isinstance(output, MediaRef):
            update["output"] = replace.get(id(output), output)
        elif isinstance(output, list) and output and isinstance(output[0], BaseModel):
            update["output"] = _map_refs(output, replace)
        mapped.append(block.model_copy(update=update) if update else block)
    return mapped
