"""What a browser may do on the server's origin: security headers, media responses, offline docs.

The web page at ``/`` holds the user's API key (in ``sessionStorage``), so
nothing else served from this origin may run script in it:

- Every response says ``X-Content-Type-Options: nosniff`` and carries a
  Content-Security-Policy (a pure ASGI middleware adds both where the route
  set none). The page and its files get ``PAGE_CSP`` (its own scripts,
  styles and API calls only: no inline script, nothing from elsewhere);
  the API's JSON gets ``API_CSP`` (nothing at all).
- User media (``GET /media/{key}``) is untrusted content: ``media_headers``
  serves it with ``MEDIA_CSP`` (``sandbox``: an opaque origin, no script)
  and as an attachment, except a short list of passive types a browser
  draws itself (raster images, audio, video), which stay inline so a link
  to a photo still shows it.
- ``/docs`` (Swagger UI) and ``/redoc`` load their scripts from the
  ``fastapi-offline`` package (the ``server`` extra), served under
  ``/docs/assets``, so they work on a machine with no internet; their
  pages get their own CSP (``docs_csp``), with a per-response nonce for
  the one inline script Swagger UI's page needs.
"""

from __future__ import annotations

import importlib.util
import mimetypes
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "API_CSP",
    "DOCS_ASSETS",
    "MEDIA_CSP",
    "PAGE_CSP",
    "SecurityHeaders",
    "docs_csp",
    "media_headers",
    "mount_docs",
]

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The web page: its own files only; ``data:`` images for its empty favicon."""

API_CSP = "default-src 'none'; frame-ancestors 'none'"
"""JSON and errors: a browser opening one directly runs and loads nothing."""

MEDIA_CSP = "sandbox; default-src 'none'; img-src 'self'; media-src 'self'; frame-ancestors 'none'"
"""User media: a sandbox (opaque origin, no script, no forms) that may only show itself."""

INLINE_MEDIA = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"})
"""Images shown inline (and ``audio/*``, ``video/*``); not SVG, which can hold script."""

DOCS_ASSETS = "/docs/assets"
"""Where Swagger UI's and ReDoc's files are served from."""


def docs_csp(nonce: str) -> str:
    """The ``/docs`` and ``/redoc`` pages: their packaged scripts, the inline one by nonce.

    ReDoc injects its styles as ``<style>`` elements and builds its search
    worker from a ``blob:``; Swagger UI draws icons from ``data:`` images.
    """
    return (
        f"default-src 'none'; script-src 'self' 'nonce-{nonce}'; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
        "connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def media_headers(key: str, mime_type: str) -> dict[str, str]:
    """Headers of a media response: sandboxed, never sniffed, an attachment unless passive."""
    bare = mime_type.split(";", 1)[0].strip().lower()
    passive = bare in INLINE_MEDIA or bare.startswith(("audio/", "video/"))
    extension = mimetypes.guess_extension(bare) or ".bin"
    # The key is checked as lowercase hex before this runs, so the name needs no quoting rules.
    filename = f"media-{key[:16]}{extension}"
    disposition = "inline" if passive else "attachment"
    return {
        "content-disposition": f'{disposition}; filename="{filename}"',
        "content-security-policy": MEDIA_CSP,
        "x-content-type-options": "nosniff",
    }


class SecurityHeaders:
    """Add ``nosniff`` and a CSP (the page's or the API's) to responses that set none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the headers to its response start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):  # an app mounted under a prefix sees it in the path
            path = path[len(root) :] or "/"
        policy = PAGE_CSP if path == "/" or path.startswith("/static/") else API_CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name.lower() for name, _ in headers}
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", policy.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _assets_folder() -> Path | None:
    """The ``static`` folder of the installed ``fastapi-offline`` (only its files are used)."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


def mount_docs(app: FastAPI) -> None:
    """Serve ``/docs`` and ``/redoc`` from packaged assets (create the app with both URLs None)."""
    folder = _assets_folder()
    if folder is not None:
        app.mount(DOCS_ASSETS, StaticFiles(directory=folder), name="docs-assets")

    def page(html: HTMLResponse | None) -> Response:
        if html is None:
            missing = (
                "the docs pages need the fastapi-offline package: pip install 'tenxgraph[server]'"
            )
            return PlainTextResponse(missing, status_code=503)
        nonce = secrets.token_urlsafe(16)
        body = bytes(html.body).decode().replace("<script", f'<script nonce="{nonce}"')
        return HTMLResponse(body, headers={"content-security-policy": docs_csp(nonce)})

    def assets(request: Request) -> str:
        return str(request.scope.get("root_path", "")) + DOCS_ASSETS

    def openapi(request: Request) -> str:
        return str(request.scope.get("root_path", "")) + (app.openapi_url or "/openapi.json")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> Response:
        html = None
        if folder is not None:
            html = get_swagger_ui_html(
                openapi_url=openapi(request),
                title=f"{app.title} - Swagger UI",
                swagger_js_url=f"{assets(request)}/swagger-ui-bundle.js",
                swagger_css_url=f"{assets(request)}/swagger-ui.css",
                swagger_favicon_url=f"{assets(request)}/favicon.png",
            )
        return page(html)

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> Response:
        html = None
        if folder is not None:
            html = get_redoc_html(
                openapi_url=openapi(request),
                title=f"{app.title} - ReDoc",
                redoc_js_url=f"{assets(request)}/redoc.standalone.js",
                redoc_favicon_url=f"{assets(request)}/favicon.png",
                with_google_fonts=False,
            )
        return page(html)
