"""Names of the two virtual nodes every graph has."""

from typing import Final

__all__ = ["END", "START"]

START: Final = "__start__"
"""The virtual node a run starts from."""
END: Final = "__end__"
"""The virtual node that ends a run."""
