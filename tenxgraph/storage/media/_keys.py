"""Media keys and ``graph://media/{key}`` URLs: the one place that says what a key may be.

A key is the SHA-256 of the media's bytes in 64 lowercase hex digits. It is
opaque to callers (take it from the ``MediaRef`` a put returned; do not
build one), and its format is checked before any I/O: 64 hex digits cannot
hold a ``/``, a ``..`` or a tenant, so no key can name a path or reach
another tenant's media. Whose media it is comes from the ``user_id`` of the
call, never from the key or URL.
"""

from __future__ import annotations

import re

from tenxgraph.core.state.message_block import MediaRef
from tenxgraph.errors import InvalidMediaKeyError

__all__ = ["MEDIA_URL_PREFIX", "MediaLocator", "is_media_url", "media_key", "media_url"]

MEDIA_URL_PREFIX = "graph://media/"
"""What a ``MediaRef.url`` pointing into a media store starts with."""

_KEY = re.compile(r"[0-9a-f]{64}")

MediaLocator = MediaRef | str
"""What the store's read methods accept: a ``MediaRef`` whose url is ``graph://media/{key}``,
that URL as a string, or the bare key."""


def media_url(key: str) -> str:
    """The ``graph://media/{key}`` URL of ``key`` (checked)."""
    return MEDIA_URL_PREFIX + check_key(key)


def is_media_url(url: object) -> bool:
    """True when ``url`` is a string starting with ``graph://media/`` (well-formed or not)."""
    return isinstance(url, str) and url.startswith(MEDIA_URL_PREFIX)


def check_key(key: object) -> str:
    """Return ``key`` if it is a well-formed media key; else raise ``InvalidMediaKeyError``."""
    if type(key) is not str:
        raise InvalidMediaKeyError(f"a media key must be a str, got {type(key).__name__}")
    if not _KEY.fullmatch(key):
        raise InvalidMediaKeyError(
            f"{_shown(key)} is not a media key (64 lowercase hex digits, the SHA-256 of the "
            "bytes, as returned in the url of the MediaRef that put returned)"
        )
    return key


def media_key(locator: object) -> str:
    """The key a ``MediaRef``, a ``graph://media/{key}`` URL or a bare key names.

    Anything else raises ``InvalidMediaKeyError`` saying what was given: a
    ``MediaRef`` of kind ``data`` or ``file_id``, or an ``https://`` URL, is
    not in a media store.
    """
    if isinstance(locator, MediaRef):
        if locator.kind != "url" or not is_media_url(locator.url):
            where = locator.url if locator.kind == "url" else locator.kind
            raise InvalidMediaKeyError(
                f"the MediaRef does not point into a media store (kind={locator.kind!r}, "
                f"{_shown(where)}); only url='graph://media/{{key}}' refs do"
            )
        locator = locator.url
    if isinstance(locator, str) and locator.startswith("graph://"):
        if not locator.startswith(MEDIA_URL_PREFIX):
            raise InvalidMediaKeyError(
                f"{_shown(locator)} is not a media URL (graph://media/{{key}})"
            )
        key = locator[len(MEDIA_URL_PREFIX) :]
        if not (isinstance(key, str) and _KEY.fullmatch(key)):
            raise InvalidMediaKeyError(
                f"{_shown(locator)} is not a media URL: after graph://media/ must come the "
                "key, 64 lowercase hex digits, and nothing else"
            )
        return key
    return check_key(locator)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 90 else f"{text[:87]}..."
