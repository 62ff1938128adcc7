"""Small shared constants and helpers."""

from tenxgraph.utils.constants import END, START

__all__ = ["END", "START"]
