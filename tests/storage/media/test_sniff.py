"""MIME types against content: detection by magic bytes and the rules a put applies.

Real files where the standard library can write them (a PNG by hand with
zlib, a WAV through ``wave``); the other formats by their documented
signatures.
"""

from __future__ import annotations

import io
import struct
import wave
import zlib

import pytest

from tenxgraph.errors import MediaTypeError
from tenxgraph.storage.media import detect_mime_type
from tenxgraph.storage.media._sniff import check_mime_type, normalize


def png_file(width: int = 2, height: int = 2) -> bytes:
    """A valid RGB PNG (every pixel red)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def wav_file() -> bytes:
    """A valid 8 kHz mono WAV of 100 silent frames."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(bytes(200))
    return buffer.getvalue()


SAMPLES = {
    "image/png": png_file(),
    "image/jpeg": b"\xff\xd8\xff\xdb\x00\x43\x00" + bytes(60),
    "image/gif": b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
    "image/webp": b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(20),
    "audio/wav": wav_file(),
    "audio/flac": b"fLaC\x00\x00\x00\x22" + bytes(34),
    "audio/ogg": b"OggS\x00\x02" + bytes(40),
    "application/pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
}


@pytest.mark.parametrize(("mime_type", "data"), SAMPLES.items())
def test_each_checked_format_is_detected(mime_type: str, data: bytes) -> None:
    assert detect_mime_type(data) == mime_type
    assert check_mime_type(mime_type, data) == mime_type
    assert check_mime_type(None, data) == mime_type


@pytest.mark.parametrize(
    "head",
    [
        b"ID3\x04\x00\x00\x00\x00\x00\x00",  # an ID3v2 tag before the frames
        b"\xff\xfb\x90\x64" + bytes(10),  # MPEG-1 layer III, 128 kbit/s, 44.1 kHz
        b"\xff\xf3\x48\xc4" + bytes(10),  # MPEG-2 layer III
    ],
)
def test_mp3_is_detected_by_its_tag_or_frame_header(head: bytes) -> None:
    assert detect_mime_type(head) == "audio/mpeg"
    assert check_mime_type(normalize("audio/mp3"), head) == "audio/mpeg"


@pytest.mark.parametrize(
    "head",
    [
        b"\xff\xf1\x50\x80" + bytes(10),  # ADTS AAC: layer bits 00
        b"\xff\xfb\xf0\x64" + bytes(10),  # bitrate index 15 (reserved)
        b"\xff\xfb\x9c\x64" + bytes(10),  # sample rate index 3 (reserved)
        b"RIFF\x24\x00\x00\x00AVI LIST",  # RIFF, but a video
        b"GIF88a",
        b"\x89PNG\r\n",  # cut short
        b"",
    ],
)
def test_near_misses_are_not_detected(head: bytes) -> None:
    assert detect_mime_type(head) is None


def test_a_pdf_header_counts_within_the_first_kilobyte_only() -> None:
    assert detect_mime_type(b" " * 1000 + b"%PDF-1.7") == "application/pdf"
    assert detect_mime_type(b" " * 1024 + b"%PDF-1.7") is None


def test_a_contradicted_type_names_the_declared_and_the_detected_one() -> None:
    with pytest.raises(MediaTypeError) as caught:
        check_mime_type("image/jpeg", SAMPLES["image/png"])
    assert str(caught.value) == (
        "mime_type 'image/jpeg' does not match the content, which is a PNG image "
        "(image/png) by its first bytes"
    )
    with pytest.raises(MediaTypeError, match=r"'audio/wav'.*an Ogg stream \(audio/ogg\)"):
        check_mime_type("audio/wav", SAMPLES["audio/ogg"])


def test_a_checked_type_on_unrecognised_content_is_refused() -> None:
    with pytest.raises(MediaTypeError, match=r"'image/png'.*no checked type.*b'hello'"):
        check_mime_type("image/png", b"hello")
    with pytest.raises(MediaTypeError, match=r"'application/pdf'.*which is empty"):
        check_mime_type("application/pdf", b"")


def test_other_types_are_accepted_unless_the_content_is_a_checked_format() -> None:
    assert check_mime_type("text/markdown", b"# title") == "text/markdown"
    assert check_mime_type("image/heic", b"\x00\x00\x00\x18ftypheic") == "image/heic"
    assert check_mime_type("video/ogg", SAMPLES["audio/ogg"]) == "video/ogg"
    assert check_mime_type("image/apng", SAMPLES["image/png"]) == "image/apng"
    with pytest.raises(MediaTypeError, match=r"'application/zip'.*PDF document"):
        check_mime_type("application/zip", SAMPLES["application/pdf"])


def test_octet_stream_or_no_type_records_what_was_detected() -> None:
    assert check_mime_type("application/octet-stream", SAMPLES["audio/wav"]) == "audio/wav"
    assert check_mime_type("application/octet-stream", b"\x00") == "application/octet-stream"
    assert check_mime_type(None, b"\x00") == "application/octet-stream"


@pytest.mark.parametrize(
    ("declared", "normal"),
    [
        ("image/JPG", "image/jpeg"),
        (" Audio/X-WAV ", "audio/wav"),
        ("audio/mpeg3", "audio/mpeg"),
        ("text/plain; charset=utf-8", "text/plain"),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", None),
    ],
)
def test_declared_types_are_normalized(declared: str, normal: str | None) -> None:
    assert normalize(declared) == (normal or declared)


@pytest.mark.parametrize("bad", ["png", "image/", "/png", "image/png/x", "image/p ng", "", "é/x"])
def test_malformed_types_are_refused(bad: str) -> None:
    with pytest.raises(MediaTypeError, match="is not a MIME type"):
        normalize(bad)


def test_a_type_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(MediaTypeError, match="must be a str, got bytes"):
        normalize(b"image/png")
