"""What each provider accepts as media: types, sizes, and which blocks may name an uploaded file.

The figures are the providers' documented limits; they are checked before a
request so a stored 30 MB photo fails with the block named, not with a 400
from the provider after the upload. A limit the provider raises later is
one line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ANTHROPIC_RULES",
    "GOOGLE_RULES",
    "LOCAL_RULES",
    "OPENAI_CHAT_RULES",
    "OPENAI_RESPONSES_RULES",
    "MediaRules",
]

MB = 1024 * 1024

_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True, slots=True)
class MediaRules:
    """One provider's media limits, by kind: ``image``, ``audio``, ``video``, ``document``."""

    provider: str
    types: dict[str, frozenset[str] | None] = field(default_factory=dict)
    """The MIME types accepted per kind; None: any type; a kind missing: not accepted at all."""
    inline_max: dict[str, int] = field(default_factory=dict)
    """The largest one item of a kind sent inline (base64), in bytes."""
    request_max: int = 0
    """The most inline media bytes one request may carry (0: no readable media)."""
    upload_max: int = 0
    """The largest file the provider's file API takes (0: no file API)."""
    by_file: frozenset[str] = frozenset()
    """The kinds a request may send as an uploaded file id."""
    readable: bool = True
    """False for a model that reads no media: it gets a text placeholder instead."""


OPENAI_CHAT_RULES = MediaRules(
    provider="openai",
    types={
        "image": _IMAGES,
        "audio": frozenset({"audio/wav", "audio/mpeg"}),
        "document": frozenset({"application/pdf"}),
    },
    inline_max={"image": 20 * MB, "audio": 20 * MB, "document": 50 * MB},
    request_max=50 * MB,
    upload_max=512 * MB,
    by_file=frozenset({"document"}),  # images and audio only inline in Chat Completions
)

OPENAI_RESPONSES_RULES = MediaRules(
    provider="openai",
    types={"image": _IMAGES, "document": None},
    inline_max={"image": 20 * MB, "document": 50 * MB},
    request_max=50 * MB,
    upload_max=512 * MB,
    by_file=frozenset({"image", "document"}),
)

ANTHROPIC_RULES = MediaRules(
    provider="anthropic",
    types={"image": _IMAGES, "document": frozenset({"application/pdf", "text/plain"})},
    inline_max={"image": 5 * MB, "document": 32 * MB},
    request_max=32 * MB,
    upload_max=500 * MB,
    by_file=frozenset({"image", "document"}),
)

GOOGLE_RULES = MediaRules(
    provider="google",
    types={
        "image": frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}),
        "audio": frozenset(
            {"audio/wav", "audio/mpeg", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"}
        ),
        "video": None,
        "document": None,
    },
    inline_max={"image": 20 * MB, "audio": 20 * MB, "video": 20 * MB, "document": 20 * MB},
    request_max=20 * MB,
    upload_max=2048 * MB,
    by_file=frozenset({"image", "audio", "video", "document"}),
)

LOCAL_RULES = MediaRules(provider="local", readable=False)
