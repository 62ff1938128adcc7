"""The README and docs/ link only to files that exist, and cover every concept page."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [
    "state-and-messages.md",
    "graph.md",
    "tools.md",
    "agents-and-providers.md",
    "context-management.md",
    "persistence-and-threads.md",
    "streaming.md",
    "cli.md",
]
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


def test_every_concept_has_a_page_listed_in_the_index() -> None:
    index = (REPO / "docs" / "README.md").read_text()
    for page in PAGES:
        assert (REPO / "docs" / page).is_file(), page
    for page in (REPO / "docs").glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not list {page.name}"


def test_relative_links_resolve() -> None:
    for document in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in LINK.findall(document.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            assert (document.parent / target).exists(), f"{document.name}: {target}"


def test_readme_starts_with_the_two_setup_commands() -> None:
    readme = (REPO / "README.md").read_text()
    first_block = readme.split("```")[1]
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert commands == ["bash", "make demo", "make check"]
