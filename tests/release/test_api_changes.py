"""The changelog's "API changes" section follows the public API snapshot; moved names keep working.

``scripts/api_changes.py`` compares ``tests/public_api.json`` with the last
release's snapshot (``tests/api_releases/``) and writes the difference into
``CHANGELOG.md``. Here: the comparison itself, that the committed section is
current (an API change without its changelog line fails), and that every
name moved since the last release is still readable from its old path,
with a ``DeprecationWarning`` naming the new one (``lazy_exports(moved=...)``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("api_changes", REPO / "scripts" / "api_changes.py")
assert _spec is not None and _spec.loader is not None
api_changes = importlib.util.module_from_spec(_spec)
sys.modules["api_changes"] = api_changes  # dataclasses look their module up while building
_spec.loader.exec_module(api_changes)


def test_added_moved_and_removed_names_are_told_apart() -> None:
    before = {"pkg": ["A", "Gone", "Moves"], "pkg.sub": ["B"], "pkg.old": ["C"]}
    after = {"pkg": ["A", "New"], "pkg.sub": ["B", "Moves"], "pkg.fresh": ["D"]}
    changes = api_changes.compare(before, after)
    assert changes.added == ["pkg.New", "pkg.fresh.D"]
    assert changes.moved == [("pkg.Moves", "pkg.sub.Moves")]
    assert changes.removed == ["pkg.Gone", "pkg.old.C"]
    assert changes.new_modules == ["pkg.fresh"]
    assert changes.gone_modules == ["pkg.old"]
    text = api_changes.section("1.2.0", changes)
    assert "- Moved `pkg.Moves` to `pkg.sub.Moves`; the old path still works" in text
    assert "- Removed `pkg.Gone`." in text
    assert "- New module `pkg.fresh`." in text


def test_a_name_dropped_by_a_re_exporting_module_is_a_move_to_its_other_home() -> None:
    before = {"pkg": ["Agent"], "pkg.core": ["Agent"]}
    changes = api_changes.compare(before, {"pkg": [], "pkg.core": ["Agent"]})
    assert changes.moved == [("pkg.Agent", "pkg.core.Agent")]
    assert (changes.added, changes.removed) == ([], [])


def test_no_change_says_so() -> None:
    surface = {"pkg": ["A"]}
    assert not api_changes.compare(surface, surface)
    assert api_changes.section("0.1.0", api_changes.compare(surface, surface)).endswith("- None.")


def test_releases_are_ordered_by_number(tmp_path: Path) -> None:
    for version in ("0.9.1", "0.10.0", "0.2.0"):
        (tmp_path / f"{version}.json").write_text(json.dumps({"v": [version]}))
    assert api_changes.last_release(tmp_path) == ("0.10.0", {"v": ["0.10.0"]})


def test_the_changelog_section_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "api_changes.py"), "--check", "CHANGELOG.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, (
        "the public API changed since the last release and CHANGELOG.md does not say so yet: "
        f"run `make api-changes`\n{result.stderr}"
    )


def test_the_last_release_is_not_newer_than_the_package() -> None:
    version, _ = api_changes.last_release()
    package = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert api_changes.version_key(version) <= api_changes.version_key(package)
    assert f"## [{version}]" in (REPO / "CHANGELOG.md").read_text()


MOVED = api_changes.compare(
    api_changes.last_release()[1], json.loads(api_changes.CURRENT.read_text())
).moved


NONE_MOVED = pytest.param(
    "", "", marks=pytest.mark.skip(reason="no public name moved since the last release")
)


@pytest.mark.parametrize(("old", "new"), MOVED or [NONE_MOVED])
def test_a_name_moved_since_the_last_release_still_reads_from_its_old_path(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module_name, name = old.rsplit(".", 1)
    module = importlib.import_module(module_name)
    monkeypatch.delitem(module.__dict__, name, raising=False)  # as in a fresh process
    keep = (
        f"{old} was released: keep it readable through lazy_exports(moved=...) in "
        f"{module_name} (CONTRIBUTING.md, 'Renaming or moving a public name')"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = getattr(module, name)
        except AttributeError:
            pytest.fail(keep)
    told = [w for w in caught if w.category is DeprecationWarning and new in str(w.message)]
    assert told, f"{keep}; it warned {[str(w.message) for w in caught]}"
    assert value is getattr(importlib.import_module(new.rsplit(".", 1)[0]), name), keep
