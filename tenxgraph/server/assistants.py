"""Routes: assistants (see docs/server.md)."""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter(tags=["assistants"])
