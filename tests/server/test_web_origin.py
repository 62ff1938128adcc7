"""The server's origin over plain HTTP: security headers, user media, the offline docs pages.

The web page holds the user's API key, so nothing else served from its
origin may run script there. These tests read the headers that promise it;
tests/server/test_web_page.py checks in Chromium that the promise holds.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import httpx
import pytest

from tenxgraph.storage.media import FilesystemMediaStore
from tests.server.conftest import Serve

SCRIPT = "localStorage.setItem('pwned', location.href); document.cookie = 'pwned=1; path=/';"
"""What a stored script would do with the origin: leave a mark the page's origin can read."""

HOSTILE = {
    "text/html": f"<!doctype html><html><body><script>{SCRIPT}</script></body></html>".encode(),
    "image/svg+xml": (
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
        f"<script>{SCRIPT}</script></svg>"
    ).encode(),
}
"""Uploads that run ``SCRIPT`` if a browser renders them as a page of the server's origin."""


def png_1x1() -> bytes:
    """A valid one-pixel PNG, built here (a browser must be able to draw it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def upload(base_url: str, data: bytes, mime_type: str) -> str:
    """Store ``data`` through ``POST /media``; answer its ``/media/{key}`` URL."""
    response = httpx.post(f"{base_url}/media", content=data, headers={"content-type": mime_type})
    assert response.status_code == 200, response.text
    return f"{base_url}/media/" + response.json()["url"].removeprefix("graph://media/")


def test_user_media_is_sandboxed_never_sniffed_and_active_types_are_attachments(
    serve: Serve, tmp_path: Path
) -> None:
    url = serve(media=FilesystemMediaStore(tmp_path / "media"))
    pdf = b"%PDF-1.4\n" + b"x" * 100
    served = {
        mime: httpx.get(upload(url, data, mime))
        for mime, data in [*HOSTILE.items(), ("application/pdf", pdf), ("image/png", png_1x1())]
    }
    for mime, response in served.items():
        assert response.status_code == 200, (mime, response.text)
        assert response.headers["x-content-type-options"] == "nosniff", mime
        policy = [part.strip() for part in response.headers["content-security-policy"].split(";")]
        assert "sandbox" in policy and "default-src 'none'" in policy, (mime, policy)
    # Anything a browser could run (HTML, SVG) or hand to a plug-in viewer downloads instead.
    for mime, extension in [
        ("text/html", "html"),
        ("image/svg+xml", "svg"),
        ("application/pdf", "pdf"),
    ]:
        disposition = served[mime].headers["content-disposition"]
        assert re.fullmatch(
            rf'attachment; filename="media-[0-9a-f]{{16}}\.{extension}"', disposition
        )
    assert served["image/png"].headers["content-disposition"].startswith("inline; filename=")
    assert served["text/html"].content == HOSTILE["text/html"]  # the bytes are kept as they were


def test_the_page_and_the_api_carry_a_strict_policy(serve: Serve) -> None:
    url = serve()
    for path in ("/", "/static/app.js"):
        response = httpx.get(url + path)
        assert response.status_code == 200
        assert response.headers["x-content-type-options"] == "nosniff"
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self';" in policy, policy
        assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, policy
    for path in ("/ok", "/threads/missing"):
        response = httpx.get(url + path)
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["content-security-policy"].startswith("default-src 'none'")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_everything_from_the_server(serve: Serve, page: str) -> None:
    pytest.importorskip("fastapi_offline", reason="the server extra is not installed")
    url = serve()
    response = httpx.get(url + page)
    assert response.status_code == 200
    html = response.text
    linked = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert linked and all(link.startswith("/docs/assets/") for link in linked), linked
    for link in linked:
        asset = httpx.get(url + link)
        assert asset.status_code == 200 and len(asset.content) > 1000, link
    assert 'spec-url="/openapi.json"' in html or "url: '/openapi.json'" in html
    # The one inline script (Swagger UI's set-up) runs by the response's own nonce.
    policy = response.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce, policy
    scripts = re.findall(r"<script([^>]*)>", html)
    assert scripts and all(f'nonce="{nonce.group(1)}"' in attributes for attributes in scripts)
    assert httpx.get(url + page).headers["content-security-policy"] != policy  # new per response
