"""Build the app ``tenxgraph serve`` describes in ``TENXGRAPH_SERVE_*`` environment variables."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["app_from_env"]


def app_from_env() -> FastAPI:
    """Not written yet."""
    raise NotImplementedError
