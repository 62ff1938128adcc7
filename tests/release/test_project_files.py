"""The files an open-source project carries: present, consistent with the metadata, linked."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = ["LICENSE", "CHANGELOG.md", "CONTRIBUTING.md", "SECURITY.md"]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_license_is_the_mit_text_the_metadata_names() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 The tenxgraph authors\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_the_project_files_link_only_to_files_that_exist() -> None:
    pages = [REPO / name for name in FILES[1:]] + [REPO / "clients" / "typescript" / "README.md"]
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)}: {target}"


def test_the_changelog_starts_with_unreleased_then_versions_newest_first() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.MULTILINE)
    assert headings[0] == "Unreleased"
    versions = [tuple(int(part) for part in version.split(".")) for version in headings[1:]]
    assert versions == sorted(versions, reverse=True) and versions
    for version in headings[1:]:
        assert re.search(
            rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M
        )


def test_the_make_targets_the_documents_name_exist() -> None:
    makefile = (REPO / "Makefile").read_text()
    named = set()
    for name in ["CONTRIBUTING.md", "CHANGELOG.md", "docs/README.md", "README.md"]:
        named |= set(re.findall(r"`make ([a-z-]+)", (REPO / name).read_text()))
    missing = [target for target in sorted(named) if not re.search(rf"^{target}:", makefile, re.M)]
    assert missing == [], f"documents name make targets the Makefile lacks: {missing}"
