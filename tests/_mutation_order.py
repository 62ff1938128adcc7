"""A pytest plugin for ``make mutation`` (scripts/mutation.py): the tests in the order listed.

mutmut runs a mutant's covering tests in no particular order (a set's) and
stops at the first failure (``-x``). A module's entry in scripts/mutation.py
lists its focused tests first (a lease's own tests on a virtual clock, say)
and the broad ones after (whole graphs in real time, where a mutant that
breaks a wait hangs until mutmut's limit): the tests run in that order here,
and the Hypothesis tests after the example-based ones, which kill most mutants
in milliseconds where a property test takes seconds. The order changes no
verdict, only how soon it is reached.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest


def listed_paths(pyproject: Path) -> list[str]:
    """The test paths of the run's ``[tool.mutmut]`` selection, in order (none outside a run)."""
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["mutmut"]
    except (OSError, KeyError):
        return []
    selection = table.get("pytest_add_cli_args_test_selection", [])
    return [arg.rstrip("/") for arg in selection if arg.startswith("tests")]


def place(nodeid: str, paths: list[str]) -> int:
    """The index of the first listed path holding the test ``nodeid`` (after all: not listed)."""
    file = nodeid.partition("::")[0]
    for index, path in enumerate(paths):
        if file == path or file.startswith(path + "/"):
            return index
    return len(paths)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the tests by their file's place in the selection, Hypothesis tests last."""
    paths = listed_paths(Path(config.rootpath) / "pyproject.toml")
    items.sort(
        key=lambda item: (
            bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False)),
            place(item.nodeid, paths),
        )
    )
