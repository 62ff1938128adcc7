"""Routes: runs and streaming (server B fills this module; see docs/server.md)."""

from __future__ import annotations

from fastapi import APIRouter

__all__ = ["router"]

router = APIRouter(tags=["runs"])
