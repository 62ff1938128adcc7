"""The public surface is a reviewed snapshot: each package's ``__all__`` as recorded in a file.

A change to what a package exports (added, removed, renamed) fails here
until ``tests/public_api.json`` is updated in the same commit, so an API
change is always a visible diff. To record the current surface:
``UPDATE_API_SNAPSHOT=1 python -m pytest tests/test_public_api.py``.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from pathlib import Path

import tenxgraph

SNAPSHOT = Path(__file__).with_name("public_api.json")
PUBLIC_MODULES = ("tenxgraph", "tenxgraph.errors")
"""Public modules that are not sub-packages: the root and the one error tree."""


def public_surface() -> dict[str, list[str]]:
    """Every tenxgraph package (an ``__init__``) and public module, and the names it exports."""
    surface = {
        name: sorted(getattr(importlib.import_module(name), "__all__", []))
        for name in PUBLIC_MODULES
    }
    for info in pkgutil.walk_packages(tenxgraph.__path__, "tenxgraph."):
        if not info.ispkg or "._" in info.name or info.name.split(".")[:2] == ["tenxgraph", "cli"]:
            continue
        module = importlib.import_module(info.name)
        surface[info.name] = sorted(getattr(module, "__all__", []))
    return surface


def test_exports_match_the_reviewed_snapshot() -> None:
    current = public_surface()
    if os.environ.get("UPDATE_API_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    recorded = json.loads(SNAPSHOT.read_text())
    changes = []
    for package in sorted(set(current) | set(recorded)):
        added = sorted(set(current.get(package, [])) - set(recorded.get(package, [])))
        removed = sorted(set(recorded.get(package, [])) - set(current.get(package, [])))
        if added or removed:
            changes.append(f"{package}: added {added}, removed {removed}")
    assert not changes, "the public API changed; review and update the snapshot:\n" + "\n".join(
        changes
    )


def test_every_export_exists() -> None:
    for package, names in public_surface().items():
        module = importlib.import_module(package)
        missing = [name for name in names if not hasattr(module, name)]
        assert not missing, f"{package}.__all__ names {missing}, which it does not define"
