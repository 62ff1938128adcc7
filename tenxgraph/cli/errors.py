"""The CLI's own error: a problem with what the user typed, reported as one line."""

from __future__ import annotations

from tenxgraph.errors import TenxGraphError

__all__ = ["CliError"]


class CliError(TenxGraphError):
    """Bad command-line input (an unknown thread, a missing file...); exit status 1."""
