"""MIME types checked against content: the declared type must agree with the first bytes.

A provider given a PNG labelled ``image/jpeg`` rejects the request, or worse
reads it wrong; a file renamed ``.png`` may be anything. So a put compares
the declared type with the magic bytes of the formats models take: images
(PNG, JPEG, GIF, WebP), audio (WAV, MP3, Ogg, FLAC) and PDF.

The rules (decision):

- a declared type of one of those formats must match the content; content
  that matches none of them is refused too (``image/png`` on text);
- any other declared type (``text/plain``, ``image/heic``) is accepted unless
  the content is one of those formats, which it then contradicts;
- no type, or ``application/octet-stream`` ("some bytes"), records the
  detected type, else ``application/octet-stream``.

Common aliases are recorded under their standard name (``image/jpg`` as
``image/jpeg``, ``audio/x-wav`` as ``audio/wav``, ``audio/mp3`` as
``audio/mpeg``); parameters (``; codecs=opus``) are dropped. Only the first
``SNIFF_BYTES`` are looked at, so a stream is checked before most of it is
stored.
"""

from __future__ import annotations

import re

from tenxgraph.errors import MediaTypeError

__all__ = ["OCTET_STREAM", "SNIFF_BYTES", "check_mime_type", "detect_mime_type", "normalize"]

SNIFF_BYTES = 1024
"""How much of the start of the content the check reads (a PDF header may sit anywhere in it)."""

OCTET_STREAM = "application/octet-stream"

_TOKEN = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
_MIME = re.compile(f"{_TOKEN}/{_TOKEN}")

_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/mpeg3": "audio/mpeg",
    "audio/x-mpeg-3": "audio/mpeg",
    "audio/x-flac": "audio/flac",
    "application/x-pdf": "application/pdf",
}

_ACCEPTED = {
    "image/png": frozenset({"image/png", "image/apng"}),
    "image/jpeg": frozenset({"image/jpeg"}),
    "image/gif": frozenset({"image/gif"}),
    "image/webp": frozenset({"image/webp"}),
    "audio/wav": frozenset({"audio/wav"}),
    "audio/mpeg": frozenset({"audio/mpeg"}),
    "audio/ogg": frozenset(
        {"audio/ogg", "audio/opus", "audio/vorbis", "application/ogg", "video/ogg"}
    ),
    "audio/flac": frozenset({"audio/flac"}),
    "application/pdf": frozenset({"application/pdf"}),
}
"""Detected type -> the declared types that agree with it."""

_CHECKED = frozenset(_ACCEPTED) | {"image/apng", "application/ogg"}
"""Declared types whose content must be recognised as such (not merely not contradict)."""

_NAMES = {
    "image/png": "a PNG image",
    "image/jpeg": "a JPEG image",
    "image/gif": "a GIF image",
    "image/webp": "a WebP image",
    "audio/wav": "WAV audio",
    "audio/mpeg": "MP3 audio",
    "audio/ogg": "an Ogg stream",
    "audio/flac": "FLAC audio",
    "application/pdf": "a PDF document",
}


def normalize(mime_type: object) -> str:
    """The declared type lowercased, without parameters, aliases resolved; checked for form."""
    if not isinstance(mime_type, str):
        raise MediaTypeError(f"mime_type must be a str, got {type(mime_type).__name__}")
    bare = mime_type.split(";", 1)[0].strip().lower()
    if not _MIME.fullmatch(bare):
        raise MediaTypeError(
            f"mime_type {mime_type[:100]!r} is not a MIME type (type/subtype, as 'image/png')"
        )
    return _ALIASES.get(bare, bare)


def detect_mime_type(head: bytes) -> str | None:
    """The type the first bytes show, among the checked formats; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if head[8:12] == b"WEBP" else "audio/wav"
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"ID3") or _mpeg_audio_frame(head):
        return "audio/mpeg"
    if b"%PDF-" in head[:SNIFF_BYTES]:
        return "application/pdf"
    return None


def _mpeg_audio_frame(head: bytes) -> bool:
    """An MPEG audio frame header: 11 sync bits, a layer, a bitrate and a sample rate.

    The layer must not be 0 (ADTS AAC uses it), the bitrate index not 15 and
    the sample rate index not 3 (both reserved).
    """
    if len(head) < 3 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    layer, bitrate, rate = (head[1] >> 1) & 3, head[2] >> 4, (head[2] >> 2) & 3
    return layer != 0 and bitrate != 15 and rate != 3


def check_mime_type(declared: str | None, head: bytes) -> str:
    """The type to record for content starting with ``head``, or ``MediaTypeError``.

    ``declared`` is already normalized (or None). The message names the
    declared type and what the content is.
    """
    detected = detect_mime_type(head)
    if declared is None or declared == OCTET_STREAM:
        return detected or OCTET_STREAM
    if detected is not None and declared in _ACCEPTED[detected]:
        return declared
    if detected is None and declared not in _CHECKED:
        return declared
    found = f"{_NAMES[detected]} ({detected})" if detected else _unknown(head)
    raise MediaTypeError(
        f"mime_type {declared!r} does not match the content, which is {found} by its first bytes"
    )


def _unknown(head: bytes) -> str:
    if not head:
        return "empty"
    return f"of no checked type (it starts with {head[:12]!r})"
