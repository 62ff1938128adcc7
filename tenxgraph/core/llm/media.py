"""Sending stored media: ``graph://media/{key}`` refs resolved by each adapter before a request.

A ``graph://`` url means nothing to a provider. A model given ``media=`` (a
media store, or a ``MediaResolver`` around one) resolves every such ref in
a request for the tenant ``ModelRequest.user_id``: it inlines the bytes as
base64, or uploads them once through the provider's file API and sends the
file id, remembered per (provider endpoint, tenant, key) in the resolver's
``FileIdCache``. Before anything is read or sent, each stored item is
checked against the provider's limits (type, inline size, request total,
file size): a ``BadRequestError`` names the message and block. A model that
reads no media (the local one) gets a text placeholder instead.

The store is passed to the model, never found globally: the model owns its
resolver, and the resolver owns its cache. Only the ``ainfo``, ``aget`` and
``aopen`` methods of the store are used (``MediaSource``), so ``core.llm``
imports no storage code; a store that has ``add_delete_listener`` also
tells the resolver what it deletes, and the resolver deletes the provider
files uploaded for it. An upload streams the media from ``aopen`` through
an unnamed temporary file the SDK reads in chunks, so the process never
holds a large file whole to upload it; concurrent first sends of the same
media share one upload (``FileIdCache.obtain``).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import tempfile
from collections.abc import AsyncIterable, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import IO, Literal, Protocol

from tenxgraph.core.llm._media_files import FileIdCache, ProviderFile
from tenxgraph.core.llm._media_rules import MediaLimits, MediaRules
from tenxgraph.core.llm._wire import output_blocks
from tenxgraph.core.llm.base import ModelRequest
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ContentBlock, MediaRef, TextBlock, ToolResultBlock
from tenxgraph.errors import BadRequestError, ConfigError, MediaNotFoundError

__all__ = [
    "FileIdCache",
    "MediaLimits",
    "MediaResolver",
    "MediaSource",
    "ProviderFile",
    "SendMode",
    "StoredMedia",
]

logger = logging.getLogger("tenxgraph.core.llm")

SendMode = Literal["inline", "upload", "auto"]
"""How stored media is sent: always inline; uploaded wherever the provider takes a file id for
that kind (else inline); or uploaded when larger than ``upload_over`` bytes or when inlining
it would pass a provider limit (the default)."""

_MEDIA_URL = "graph://media/"
_DEFAULT_USER = "default"
_MEDIA_BLOCKS = frozenset({"image", "audio", "video", "document", "data"})


class StoredMedia(Protocol):
    """What a media store says about one object (``MediaInfo`` fits)."""

    @property
    def key(self) -> str:
        """The SHA-256 of the bytes."""
        ...

    @property
    def size(self) -> int:
        """Length in bytes."""
        ...

    @property
    def mime_type(self) -> str:
        """The checked MIME type."""
        ...


class MediaSource(Protocol):
    """The read methods of a media store an adapter uses (``MediaStore`` fits)."""

    async def ainfo(self, media: MediaRef | str, *, user_id: str = ...) -> StoredMedia | None:
        """The stored object, or None."""
        ...

    async def aget(self, media: MediaRef | str, *, user_id: str = ...) -> bytes:
        """All its bytes."""
        ...

    def aopen(
        self, media: MediaRef | str, *, user_id: str = ...
    ) -> AbstractAsyncContextManager[AsyncIterable[bytes]]:
        """Its bytes as a stream of chunks."""
        ...


Uploader = Callable[[IO[bytes], str, str], Awaitable[ProviderFile]]
"""An adapter's upload: ``(file, mime_type, filename) -> ProviderFile``; ``file`` is a
binary file at its start (the SDK reads it in chunks), closed after the upload."""

Deleter = Callable[[str], Awaitable[None]]
"""An adapter's deletion of one provider file, by the id ``ProviderFile.file_id`` holds."""


@dataclass
class MediaResolver:
    """How a model sends stored media: from which store, inline or uploaded, with which cache.

    Give it to a model as ``media=`` (a bare store means ``MediaResolver(store)``).
    ``send``: ``"auto"`` (the default), ``"inline"`` or ``"upload"`` (see
    ``SendMode``); ``upload_over`` is the size over which ``"auto"`` uploads.
    ``limits`` overrides the provider's size limits. ``ready_timeout`` bounds
    the wait for an uploaded file the provider is still processing (Gemini
    video). When the store deletes media (a deleted thread, a gc), the
    provider files uploaded for it are deleted too, each within
    ``delete_timeout`` seconds (a failure is logged, never raised).
    """

    store: MediaSource
    send: SendMode = "auto"
    upload_over: int = 1024 * 1024
    file_ids: FileIdCache = field(default_factory=FileIdCache)
    limits: MediaLimits | None = None
    ready_timeout: float = 300.0
    delete_timeout: float = 10.0
    _deleters: dict[str, Deleter] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.send not in ("inline", "upload", "auto"):
            raise ConfigError(f"send must be 'inline', 'upload' or 'auto', got {self.send!r}")
        for name in ("upload_over", "ready_timeout", "delete_timeout"):
            if not getattr(self, name) >= 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        listen = getattr(self.store, "add_delete_listener", None)
        if listen is not None:
            listen(self.released)

    async def released(self, user_id: str, key: str) -> None:
        """The store deleted ``key``: forget its provider files and delete them there.

        Best effort: a provider that fails or takes over ``delete_timeout``
        seconds is logged with the file id, and the next file is tried.
        """
        for endpoint, file in (await self.file_ids.forget(user_id, key)).items():
            delete = self._deleters.get(endpoint)
            if delete is None:
                logger.warning(
                    "media %s released: cannot delete its file %s at %s (no request went there "
                    "from this process)",
                    key,
                    file.file_id,
                    endpoint,
                )
                continue
            try:
                await asyncio.wait_for(delete(file.file_id), self.delete_timeout)
            except Exception:
                logger.warning(
                    "media %s released: deleting its file %s at %s failed",
                    key,
                    file.file_id,
                    endpoint,
                    exc_info=True,
                )


def media_resolver(media: MediaResolver | MediaSource | None) -> MediaResolver | None:
    """The ``media=`` option of a model as a resolver."""
    if media is None or isinstance(media, MediaResolver):
        return media
    return MediaResolver(media)


def is_stored(ref: MediaRef) -> bool:
    """True for a ref whose url is ``graph://media/...``."""
    return ref.kind == "url" and (ref.url or "").startswith(_MEDIA_URL)


async def prepare_media(
    request: ModelRequest,
    rules: MediaRules,
    media: MediaResolver | None,
    *,
    upload: Uploader | None = None,
    delete: Deleter | None = None,
    endpoint: str = "",
) -> ModelRequest:
    """``request`` with its stored media resolved for the provider ``rules`` describe.

    Messages without stored media are kept as they are (the request is only
    copied when something changed). ``endpoint`` names the provider account
    in the file-id cache (its base URL); ``delete`` is how its files are
    deleted when their media is (see ``MediaResolver.released``).
    """
    endpoint = endpoint or rules.provider
    if media is not None:
        if media.limits is not None:
            rules = media.limits.applied_to(rules)
        if delete is not None:
            media._deleters[endpoint] = delete
    walk = _Walk(rules, media, upload, endpoint, request.user_id)
    messages: list[Message] = []
    changed = False
    for index, message in enumerate(request.messages):
        content = [
            await walk.block(block, f"message {index} block {position}")
            for position, block in enumerate(message.content)
        ]
        if any(new is not old for new, old in zip(content, message.content, strict=True)):
            message = message.model_copy(update={"content": content})
            changed = True
        messages.append(message)
    return replace(request, messages=messages) if changed else request


class _Walk:
    """One request's resolution: the blocks in order, and the inline bytes counted so far."""

    def __init__(
        self,
        rules: MediaRules,
        media: MediaResolver | None,
        upload: Uploader | None,
        endpoint: str,
        user_id: str | None,
    ) -> None:
        self.rules = rules
        self.media = media
        self.upload = upload
        self.endpoint = endpoint
        self.user_id = _DEFAULT_USER if user_id is None else str(user_id)
        self.inline_total = 0
        self.read: dict[str, str] = {}
        """Base64 of the stored media inlined so far, by key: repeated media is read once."""

    async def block(self, block: ContentBlock, where: str) -> ContentBlock:
        if isinstance(block, ToolResultBlock):
            return await self._tool_result(block, where)
        media = getattr(block, "media", None)
        if not self.rules.readable and block.type in _MEDIA_BLOCKS:
            return _placeholder(block, media)
        if not isinstance(media, MediaRef):
            return block
        kind = _kind(block.type, media)
        update = {"media": await self.ref(media, kind, where)}
        thumbnail = getattr(block, "thumbnail", None)
        if isinstance(thumbnail, MediaRef):
            update["thumbnail"] = await self.ref(thumbnail, "image", f"{where} (thumbnail)")
        if all(update[name] is getattr(block, name) for name in update):
            return block
        return block.model_copy(update=update)

    async def _tool_result(self, block: ToolResultBlock, where: str) -> ContentBlock:
        output = block.output
        if isinstance(output, MediaRef):
            if not self.rules.readable:
                new: object = _placeholder_text(_kind("data", output), output)
            else:
                new = await self.ref(output, _kind("data", output), f"{where} output")
        elif (blocks := output_blocks(output)) is not None:
            items = [
                await self.block(item, f"{where} output item {n}") for n, item in enumerate(blocks)
            ]
            new = items if any(a is not b for a, b in zip(items, blocks, strict=True)) else output
        else:
            return block
        return block if new is output else block.model_copy(update={"output": new})

    async def ref(self, ref: MediaRef, kind: str, where: str) -> MediaRef:
        """``ref`` resolved: inline data or a provider file id (other refs are kept).

        Media already inline counts toward the request's inline total.
        """
        if ref.kind == "data":
            self._add_inline(len(ref.data_base64 or "") * 3 // 4, where, "")
            return ref
        if not is_stored(ref):
            return ref
        if self.media is None:
            raise self._error(
                f"{where}: {ref.url} is in a media store, and this model was given none; "
                "pass media=<the media store> to the model"
            )
        info = await self.media.store.ainfo(ref, user_id=self.user_id)
        if info is None:
            raise MediaNotFoundError(
                f"{self.rules.provider}: {where}: no media {ref.url} for user_id {self.user_id!r}"
            )
        self._check_type(kind, info.mime_type, where)
        if self._uploads(kind, info.size):
            return await self._by_file(ref, info, where)
        self._check_inline(kind, info.size, where)
        encoded = self.read.get(info.key)
        if encoded is None:
            data = await self.media.store.aget(ref, user_id=self.user_id)
            encoded = self.read[info.key] = base64.b64encode(data).decode("ascii")
        return ref.model_copy(
            update={
                "kind": "data",
                "url": None,
                "data_base64": encoded,
                "mime_type": info.mime_type,
                "size_bytes": info.size,
            }
        )

    def _uploads(self, kind: str, size: int) -> bool:
        assert self.media is not None
        if kind not in self.rules.by_file or self.upload is None:
            return False
        send = self.media.send
        if send != "auto":
            return send == "upload"
        inline_max = self.rules.inline_max.get(kind, self.rules.request_max)
        return (
            size > self.media.upload_over
            or size > inline_max
            or self.inline_total + size > self.rules.request_max
        )

    async def _by_file(self, ref: MediaRef, info: StoredMedia, where: str) -> MediaRef:
        assert self.media is not None and self.upload is not None
        upload = self.upload

        async def uploaded() -> ProviderFile:
            if info.size > self.rules.upload_max:
                raise self._error(
                    f"{where}: {ref.url} is {info.size} bytes, over the "
                    f"{self.rules.upload_max}-byte limit of {self.rules.provider}'s file API"
                )
            with tempfile.TemporaryFile() as spool:
                await self._copy(ref, spool)
                return await upload(spool, info.mime_type, ref.filename or f"media-{info.key[:16]}")

        known = await self.media.file_ids.obtain(self.endpoint, self.user_id, info.key, uploaded)
        return ref.model_copy(
            update={
                "kind": "file_id",
                "url": None,
                "file_id": known.file_id,
                "mime_type": info.mime_type,
                "size_bytes": info.size,
            }
        )

    async def _copy(self, ref: MediaRef, spool: IO[bytes]) -> None:
        """Stream the media from the store into ``spool``, left at its start for the upload."""
        assert self.media is not None
        async with self.media.store.aopen(ref, user_id=self.user_id) as stream:
            async for chunk in stream:
                spool.write(chunk)
        spool.seek(0)

    def _check_type(self, kind: str, mime_type: str, where: str) -> None:
        if kind not in self.rules.types:
            raise self._error(f"{where}: {self.rules.provider} does not accept {kind} media here")
        accepted = self.rules.types[kind]
        if accepted is not None and mime_type not in accepted:
            raise self._error(
                f"{where}: {mime_type} is not {_article(kind)} {kind} type "
                f"{self.rules.provider} accepts "
                f"({', '.join(sorted(accepted))})"
            )

    def _check_inline(self, kind: str, size: int, where: str) -> None:
        limit = self.rules.inline_max.get(kind, self.rules.request_max)
        hint = (
            " (send it as a file: MediaResolver(store, send='upload'))"
            if (kind in self.rules.by_file and self.upload is not None)
            else ""
        )
        if size > limit:
            raise self._error(
                f"{where}: the {kind} is {size} bytes, over {self.rules.provider}'s "
                f"{limit}-byte limit for inline {kind} media{hint}"
            )
        self._add_inline(size, where, hint)

    def _add_inline(self, size: int, where: str, hint: str) -> None:
        self.inline_total += size
        if self.inline_total > self.rules.request_max:
            raise self._error(
                f"{where}: the inline media of this request come to {self.inline_total} bytes "
                f"with this block, over {self.rules.provider}'s {self.rules.request_max}-byte "
                f"limit per request{hint}"
            )

    def _error(self, text: str) -> BadRequestError:
        provider = self.rules.provider
        return BadRequestError(f"{provider}: {text}", provider=provider)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _kind(block_type: str, ref: MediaRef) -> str:
    """``image``, ``audio``, ``video`` or ``document``: by block, else by MIME type."""
    if block_type in ("image", "audio", "video", "document"):
        return block_type
    major = (ref.mime_type or "").split("/", 1)[0]
    return major if major in ("image", "audio", "video") else "document"


def _placeholder_text(kind: str, ref: MediaRef) -> str:
    details = [d for d in (ref.filename, ref.mime_type) if d]
    if ref.size_bytes is not None:
        details.append(f"{ref.size_bytes} bytes")
    shown = f" ({', '.join(details)})" if details else ""
    return f"[{kind}{shown}: not shown, this model cannot read {kind} content]"


def _placeholder(block: ContentBlock, ref: MediaRef | None) -> ContentBlock:
    """What a model that reads no media gets for a media block: its text, else a placeholder."""
    text = getattr(block, "text", None)
    if block.type == "document" and isinstance(text, str):
        return block  # the converter sends a document's text
    if ref is None:  # a data block holding its bytes itself
        ref = MediaRef(kind="url", url="about:blank", mime_type=getattr(block, "mime_type", None))
    return TextBlock(text=_placeholder_text(_kind(block.type, ref), ref))
