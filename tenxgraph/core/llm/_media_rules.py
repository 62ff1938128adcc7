"""What each provider accepts as media: types, sizes, and which blocks may name an uploaded file.

The figures are the providers' documented limits; they are checked before a
request so a stored 30 MB photo fails with the block named, not with a 400
from the provider after the upload. A limit the provider raises later is
one line here, and ``MediaLimits`` (a ``MediaResolver`` option) changes one
for a model without waiting for a release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tenxgraph.errors import ConfigError

__all__ = [
    "ANTHROPIC_RULES",
    "GOOGLE_RULES",
    "LOCAL_RULES",
    "OPENAI_CHAT_RULES",
    "OPENAI_RESPONSES_RULES",
    "MediaLimits",
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


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """Size limits that replace a provider's defaults (None or a kind left out: the default).

    For a provider that raised a limit (or an account with a lower one):
    ``MediaResolver(store, limits=MediaLimits(inline_max={"image": 10 * 2**20}))``.
    """

    inline_max: Mapping[str, int] = field(default_factory=dict)
    """The largest one item sent inline, by kind (``image``, ``audio``, ``video``, ``document``)."""
    request_max: int | None = None
    """The most inline media bytes one request may carry."""
    upload_max: int | None = None
    """The largest file sent through the provider's file API."""

    def __post_init__(self) -> None:
        sizes: dict[str, int | None] = {f"inline_max[{k!r}]": v for k, v in self.inline_max.items()}
        sizes.update(request_max=self.request_max, upload_max=self.upload_max)
        for name, size in sizes.items():
            if size is not None and (type(size) is not int or size < 0):
                raise ConfigError(f"MediaLimits.{name} must be an int >= 0, got {size!r}")

    def applied_to(self, rules: MediaRules) -> MediaRules:
        """``rules`` with these limits in place of its own."""
        return replace(
            rules,
            inline_max={**rules.inline_max, **self.inline_max},
            request_max=rules.request_max if self.request_max is None else self.request_max,
            upload_max=rules.upload_max if self.upload_max is None else self.upload_max,
        )


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
