"""The changelog's "API changes" section, from the public API snapshots.

``tests/public_api.json`` is the reviewed public surface now (each public
module and the names it exports; ``tests/test_public_api.py`` keeps it
exact). ``tests/api_releases/<version>.json`` is the same list as it was
released. This script compares the newest release with now and writes the
difference, grouped as Keep a Changelog does (added, moved, removed), between
the markers ``<!-- api-changes:start -->`` and ``<!-- api-changes:end -->`` of
``CHANGELOG.md``; ``tests/release/test_api_changes.py`` fails while that
section is stale, so an API change cannot land without its changelog line.

    python scripts/api_changes.py                 # print the section
    python scripts/api_changes.py --write CHANGELOG.md
    python scripts/api_changes.py --check CHANGELOG.md
    python scripts/api_changes.py --release 0.2.0 # at a release: snapshot the surface

A name that leaves one module and appears in another is "moved": its old
path must keep working for a while, through ``lazy_exports(moved=...)`` in
the old package (``tenxgraph/utils/_lazy.py``), which warns once and names the
new path. CONTRIBUTING.md describes the steps.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CURRENT = REPO / "tests" / "public_api.json"
RELEASES = REPO / "tests" / "api_releases"
START = "<!-- api-changes:start -->"
END = "<!-- api-changes:end -->"
Surface = dict[str, list[str]]


@dataclass
class Changes:
    """What differs between two public surfaces, each list sorted."""

    added: list[str] = field(default_factory=list)
    """Dotted paths exported now and not before."""
    moved: list[tuple[str, str]] = field(default_factory=list)
    """(old path, new path): the name left one module and appeared in another."""
    removed: list[str] = field(default_factory=list)
    """Dotted paths exported before and nowhere now."""
    new_modules: list[str] = field(default_factory=list)
    gone_modules: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any((self.added, self.moved, self.removed, self.new_modules, self.gone_modules))


def version_key(version: str) -> tuple[int, ...]:
    """``0.10.0`` after ``0.9.1``: numeric, part by part."""
    if not re.fullmatch(r"\d+(\.\d+)*", version):
        raise SystemExit(f"{version!r} is not a release version (digits and dots)")
    return tuple(int(part) for part in version.split("."))


def last_release(folder: Path = RELEASES) -> tuple[str, Surface]:
    """The newest release's version and its surface."""
    snapshots = sorted(folder.glob("*.json"), key=lambda path: version_key(path.stem))
    if not snapshots:
        raise SystemExit(f"no release snapshot in {folder}: run --release VERSION once")
    surface: Surface = json.loads(snapshots[-1].read_text())
    return snapshots[-1].stem, surface


def compare(before: Surface, after: Surface) -> Changes:
    """The changes from ``before`` to ``after``."""
    old = {(module, name) for module, names in before.items() for name in names}
    new = {(module, name) for module, names in after.items() for name in names}
    changes = Changes(
        new_modules=sorted(set(after) - set(before)),
        gone_modules=sorted(set(before) - set(after)),
    )
    for module, name in sorted(old - new):
        # where the name went: a module that exports it newly, else one that already did
        targets = sorted(m for m, n in new - old if n == name)
        targets = targets or sorted(m for m, n in new if n == name)
        if targets:
            changes.moved += [(f"{module}.{name}", f"{target}.{name}") for target in targets]
        else:
            changes.removed.append(f"{module}.{name}")
    arrived = {new_path for _, new_path in changes.moved}
    changes.added = sorted(f"{m}.{n}" for m, n in new - old if f"{m}.{n}" not in arrived)
    return changes


def section(version: str, changes: Changes) -> str:
    """The Markdown between the markers."""
    lines = [
        f"Public API changes since {version}, from `tests/public_api.json`"
        " (written by `make api-changes`):",
        "",
    ]
    if not changes:
        return "\n".join([*lines, "- None."])
    items = [
        *(f"- New module `{module}`." for module in changes.new_modules),
        *(f"- Added `{path}`." for path in changes.added),
        *(
            f"- Moved `{old}` to `{new}`; the old path still works and warns once."
            for old, new in changes.moved
        ),
        *(f"- Removed `{path}`." for path in changes.removed),
        *(f"- Removed module `{module}`." for module in changes.gone_modules),
    ]
    return "\n".join([*lines, *items])


def replace_section(changelog: str, text: str) -> str:
    """``changelog`` with the text between the markers replaced."""
    start, end = changelog.find(START), changelog.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"the changelog has no {START} ... {END} block")
    return changelog[: start + len(START)] + "\n" + text + "\n" + changelog[end:]


def main(argv: list[str] | None = None) -> int:
    """Print, write, check or snapshot, as the arguments say; 1 when a check fails."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", type=Path, metavar="CHANGELOG", help="update its section")
    action.add_argument("--check", type=Path, metavar="CHANGELOG", help="fail if it is stale")
    action.add_argument("--release", metavar="VERSION", help="snapshot the surface as released")
    args = parser.parse_args(argv)
    current: Surface = json.loads(CURRENT.read_text())
    if args.release:
        version_key(args.release)
        target = RELEASES / f"{args.release}.json"
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
        print(f"wrote {target.relative_to(REPO)}")
        return 0
    version, released = last_release()
    text = section(version, compare(released, current))
    if args.write is None and args.check is None:
        print(text)
        return 0
    path = args.write or args.check
    before = path.read_text()
    after = replace_section(before, text)
    if args.check is not None:
        if after != before:
            print(f"{path} is stale: run `make api-changes`", file=sys.stderr)
            return 1
        return 0
    path.write_text(after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
