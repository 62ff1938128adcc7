"""A pytest plugin for ``make mutation`` (scripts/mutation.py): Hypothesis tests run last.

mutmut runs a mutant's covering tests in no particular order and stops at the
first failure (``-x``); the example-based tests kill most mutants in
milliseconds, a property test takes seconds. Running the property tests last
changes no verdict, only how soon it is reached.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the Hypothesis tests after the others, each group in its own order."""
    items.sort(
        key=lambda item: bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))
    )
