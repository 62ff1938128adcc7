"""Content blocks in LangChain's standard form, both ways (see ``langchain_format``).

tenxgraph block -> LangChain block:

- ``TextBlock`` -> ``{"type": "text", "text"}``, its annotations as
  ``{"type": "citation", "url", "title"}`` items of ``annotations``;
- ``ReasoningBlock`` -> ``{"type": "reasoning", "reasoning": summary}``;
- ``ImageBlock``/``AudioBlock``/``VideoBlock`` -> ``{"type": "image"|"audio"|"video"}``
  and ``DocumentBlock``/``DataBlock`` -> ``{"type": "file"}``, each with its
  source as ``url``, ``base64`` or ``file_id`` and its ``mime_type``;
- the blocks LangChain has no standard block for (tool results outside a tool
  message, tool calls outside an AI message, errors, annotations) ->
  ``{"type": "non_standard", "value": {"tenxgraph": <the block's JSON>}}``.

What a standard block cannot hold (alt text, sizes, hashes, details, a data
block's own media) travels in the block's ``extras["tenxgraph"]``, so the
reverse conversion gives back the same block. Read in, besides these, are
LangChain's older data blocks (``source_type`` with ``url``/``data``/``id``,
written back in that form), ``image_url`` blocks and ``data:`` URLs (read as
inline data, written back as standard blocks) and ``thinking`` blocks.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_json

from tenxgraph.core.state.message import _DOCUMENT_TYPES
from tenxgraph.core.state.message_block import (
    AnnotationRef,
    AudioBlock,
    ContentBlock,
    DataBlock,
    DocumentBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    VideoBlock,
)
from tenxgraph.errors import StateError

__all__ = ["KEY", "block_from_langchain", "block_to_langchain", "describe"]

KEY = "tenxgraph"
"""The key under which tenxgraph's own data travels in LangChain's format."""

_BLOCK = TypeAdapter[ContentBlock](ContentBlock)
_MEDIA_BLOCKS: dict[str, type[ImageBlock | AudioBlock | VideoBlock]] = {
    "image": ImageBlock,
    "audio": AudioBlock,
    "video": VideoBlock,
}
_SOURCE_KEYS = {"url": "url", "data": "base64", "file_id": "file_id"}
"""MediaRef kind -> the standard block's key for that source."""
_V0_KEYS = {"url": ("url", "url"), "data": ("base64", "data"), "file_id": ("id", "id")}
"""MediaRef kind -> (``source_type``, key) of LangChain's older data blocks."""
_SOURCE_FIELDS = {"url": "url", "data": "data_base64", "file_id": "file_id"}
SUPPORTED = (
    "text",
    "reasoning",
    "thinking",
    "image",
    "audio",
    "video",
    "file",
    "image_url",
    "non_standard",
)


# --- tenxgraph -> LangChain ----------------------------------------------------------------


def block_to_langchain(block: BaseModel, form: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``block`` as a LangChain content block; ``form`` is what was read with it, if anything.

    A ``form`` with ``source_type`` writes a media block in LangChain's older
    data-block form (as a client sent it); its other keys are merged in as given.
    """
    if isinstance(block, TextBlock):
        out = _text(block)
    elif isinstance(block, ReasoningBlock):
        out = {"type": "reasoning", "reasoning": block.summary}
        if block.details is not None:
            out["extras"] = {KEY: {"details": block.details}}
    elif isinstance(block, ImageBlock | AudioBlock | VideoBlock | DocumentBlock):
        out = _media(block, form is not None and "source_type" in form)
    elif isinstance(block, DataBlock):
        out = _data(block)
    else:
        out = {"type": "non_standard", "value": {KEY: block.model_dump(mode="json")}}
    if form:
        extras = {**form.get("extras", {}), **out.get("extras", {})}
        out.update({k: v for k, v in form.items() if k != "source_type"})
        if extras:
            out["extras"] = extras
    return out


def _text(block: TextBlock) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": block.text}
    if block.annotations:
        out["annotations"] = [_citation(ref) for ref in block.annotations]
        if _refs(out["annotations"]) != block.annotations:
            out["extras"] = {KEY: {"annotations": _dump_list(block.annotations)}}
    return out


def _citation(ref: AnnotationRef) -> dict[str, Any]:
    citation: dict[str, Any] = {"type": "citation"}
    if ref.url is not None:
        citation["url"] = ref.url
    if ref.title is not None:
        citation["title"] = ref.title
    return citation


def _media(block: ImageBlock | AudioBlock | VideoBlock | DocumentBlock, v0: bool) -> dict[str, Any]:
    kind = "file" if isinstance(block, DocumentBlock) else block.type
    out: dict[str, Any] = {"type": kind, **_source(block.media, v0)}
    extra = block.model_dump(mode="json", exclude_none=True, exclude={"type", "media"})
    rest = _media_rest(block.media)
    if block.media.kind == "url" and str(block.media.url).startswith("data:"):
        rest["kind"] = "url"  # a URL that is a data: URL, not inline data
    if rest:
        extra["media"] = rest
    if isinstance(block, DocumentBlock) and _file_kind(block.media.mime_type) != "document":
        extra["type"] = "document"
    if extra:
        out["extras"] = {KEY: extra}
    return out


def _data(block: DataBlock) -> dict[str, Any]:
    """A data block: a file block with its own MIME type; its media (if any) in extras too."""
    out: dict[str, Any] = {"type": "file", "mime_type": block.mime_type}
    extra: dict[str, Any] = {}
    if block.data_base64 is not None:
        out["base64"] = block.data_base64
    elif block.media is not None and block.media.kind != "data":
        # readers find a URL or file id where standard blocks have it (``base64`` here
        # is always the block's own data)
        out.update(_source(block.media, False))
        out["mime_type"] = block.mime_type
    if block.media is not None:
        extra["media"] = block.media.model_dump(mode="json", exclude_none=True)
    if _file_kind(block.mime_type) != "data":
        extra["type"] = "data"
    if extra:
        out["extras"] = {KEY: extra}
    return out


def _source(media: MediaRef, v0: bool) -> dict[str, Any]:
    value = getattr(media, _SOURCE_FIELDS[media.kind])
    if v0:
        source_type, key = _V0_KEYS[media.kind]
        out: dict[str, Any] = {"source_type": source_type, key: value}
    else:
        out = {_SOURCE_KEYS[media.kind]: value}
    if media.mime_type is not None:
        out["mime_type"] = media.mime_type
    return out


def _media_rest(media: MediaRef) -> dict[str, Any]:
    """The MediaRef fields the standard block does not hold."""
    exclude = {"kind", "mime_type", _SOURCE_FIELDS[media.kind]}
    return media.model_dump(mode="json", exclude_none=True, exclude=exclude)


# --- LangChain -> tenxgraph ----------------------------------------------------------------


def block_from_langchain(item: Any, where: str) -> tuple[ContentBlock, dict[str, Any]]:
    """A LangChain content item as a tenxgraph block, and the keys of it the block cannot hold.

    The second value is empty for a block tenxgraph wrote (its ``extras``
    give back the same block); for a block from elsewhere it holds the keys
    to write back with it (an ``id``, ``index``, a client's ``metadata``...).
    """
    if isinstance(item, str):
        return TextBlock(text=item), {}
    if not isinstance(item, Mapping):
        raise StateError(f"{where}: a content item must be a text or a dict, got {describe(item)}")
    kind = item.get("type")
    extra = _extra(item, where)
    try:
        block, used = _read(item, kind, extra, where)
    except (ValidationError, ValueError, TypeError) as exc:
        if isinstance(exc, StateError):
            raise
        raise StateError(f"{where}: not a valid {kind!r} content block: {exc}") from None
    rest = {k: v for k, v in item.items() if k not in used}
    if isinstance(item.get("extras"), Mapping):
        others = {k: v for k, v in item["extras"].items() if k != KEY}
        rest.pop("extras", None)
        if others:
            rest["extras"] = others
    return block, rest


def _read(
    item: Mapping[str, Any], kind: Any, extra: dict[str, Any], where: str
) -> tuple[ContentBlock, set[str]]:
    if kind == "text":
        return _read_text(item, extra)
    if kind in ("reasoning", "thinking"):
        summary = item.get(kind, "")
        return ReasoningBlock(summary=summary, **extra), {"type", kind, "extras"}
    if kind in _MEDIA_BLOCKS or kind == "file":
        return _read_media(item, kind, extra, where)
    if kind == "image_url":
        url = item.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) and set(url) == {"url"} else url
        if not isinstance(url, str):
            raise StateError(f"{where}: an image_url block needs 'image_url' as a URL text")
        return ImageBlock(media=_from_url(url, None, where)), {"type", "image_url"}
    if kind == "non_standard":
        value = item.get("value")
        if isinstance(value, Mapping) and isinstance(value.get(KEY), Mapping):
            # as JSON, as a stored block is read: a tool result's output that is media
            # or blocks comes back as such, not as the dict it was written as
            return _BLOCK.validate_json(to_json(value[KEY])), {"type", "value"}
        raise StateError(
            f"{where}: a 'non_standard' block holds provider data tenxgraph cannot keep "
            f"(only its own, under value[{KEY!r}])"
        )
    raise StateError(
        f"{where}: unknown content block type {kind!r}; supported: {', '.join(SUPPORTED)}"
    )


def _read_text(item: Mapping[str, Any], extra: dict[str, Any]) -> tuple[TextBlock, set[str]]:
    used = {"type", "text", "extras"}
    annotations = extra.get("annotations")
    if annotations is None and item.get("annotations"):
        annotations = _refs(item["annotations"])
        if [_citation(ref) for ref in annotations] == item["annotations"]:
            used.add("annotations")  # else written back as given
    elif annotations is not None:
        used.add("annotations")
    return TextBlock(text=item.get("text"), annotations=annotations or []), used


def _read_media(
    item: Mapping[str, Any], kind: str, extra: dict[str, Any], where: str
) -> tuple[ContentBlock, set[str]]:
    mime = item.get("mime_type")
    if kind == "file":
        kind = extra.pop("type", None) or _file_kind(mime)
        if kind == "data":
            return _read_data(item, mime, extra, where)
    media, used = _media_ref(item, extra.pop("media", {}), where)
    cls: type[BaseModel] = DocumentBlock if kind == "document" else _MEDIA_BLOCKS[kind]
    return cls.model_validate({"media": media, **extra}), used  # type: ignore[return-value]


def _read_data(
    item: Mapping[str, Any], mime: Any, extra: dict[str, Any], where: str
) -> tuple[ContentBlock, set[str]]:
    used = {"type", "mime_type", "base64", "url", "file_id", "extras"}
    if not isinstance(mime, str):
        raise StateError(f"{where}: a file block of data needs its 'mime_type'")
    if "media" in extra:
        return DataBlock(mime_type=mime, data_base64=item.get("base64"), media=extra["media"]), used
    if "base64" in item:
        return DataBlock(mime_type=mime, data_base64=item["base64"]), used
    if "url" not in item and "file_id" not in item:
        return DataBlock(mime_type=mime), used
    media, used = _media_ref(item, {}, where)
    return DataBlock(mime_type=mime, media=media), used


def _media_ref(
    item: Mapping[str, Any], rest: Mapping[str, Any], where: str
) -> tuple[MediaRef, set[str]]:
    """The block's source (standard keys or the older ``source_type`` form) as a MediaRef."""
    mime = item.get("mime_type")
    used = {"type", "mime_type", "extras"}
    source_type = item.get("source_type")
    if source_type is not None:
        keys = {"url": ("url", "url"), "base64": ("data", "data"), "id": ("file_id", "id")}
        if source_type not in keys:
            raise StateError(f"{where}: source_type {source_type!r} is not one of url, base64, id")
        kind, key = keys[source_type]
        used.add(key)  # source_type stays with the rest: the form to write back in
        if kind == "url" and str(item.get(key, "")).startswith("data:") and not rest:
            return _from_url(item[key], mime, where), used
        return MediaRef.model_validate({"kind": kind, _SOURCE_FIELDS[kind]: item.get(key),
                                        "mime_type": mime, **rest}), used  # fmt: skip
    for kind, key in _SOURCE_KEYS.items():
        if key in item:
            used.add(key)
            if kind == "url" and str(item[key]).startswith("data:") and not rest:
                return _from_url(item[key], mime, where), used
            fields = {"kind": kind, _SOURCE_FIELDS[kind]: item[key], "mime_type": mime, **rest}
            return MediaRef.model_validate(fields), used
    raise StateError(f"{where}: a {item.get('type')!r} block needs 'url', 'base64' or 'file_id'")


def _from_url(url: str, mime: str | None, where: str) -> MediaRef:
    """A URL as a MediaRef; a ``data:`` URL as inline data (its MIME type from the URL)."""
    if not url.startswith("data:"):
        return MediaRef(kind="url", url=url, mime_type=mime)
    header, sep, data = url[5:].partition(",")
    if not sep or not header.endswith(";base64"):
        raise StateError(f"{where}: a data: URL must be base64 (data:<mime>;base64,<data>)")
    try:
        binascii.a2b_base64(data.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise StateError(f"{where}: the data: URL is not valid base64: {exc}") from None
    return MediaRef(kind="data", data_base64=data, mime_type=header[:-7] or mime)


def _extra(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    extras = item.get("extras")
    own = extras.get(KEY) if isinstance(extras, Mapping) else None
    if own is None:
        return {}
    if not isinstance(own, Mapping):
        raise StateError(f"{where}: extras[{KEY!r}] must be a dict, got {describe(own)}")
    return dict(own)


def _refs(citations: Any) -> list[AnnotationRef]:
    if not isinstance(citations, list):
        return []
    return [
        AnnotationRef(url=c.get("url"), title=c.get("title"))
        for c in citations
        if isinstance(c, Mapping)
    ]


def _file_kind(mime: str | None) -> str:
    """What a file block of this MIME type is read as: ``document`` or ``data``."""
    if mime is None or mime.startswith("text/") or mime in _DOCUMENT_TYPES:
        return "document"
    return "data"


def _dump_list(items: list[AnnotationRef]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in items]


def describe(value: Any) -> str:
    """``value``'s type and a short repr, for error messages."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"
