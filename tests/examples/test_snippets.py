"""Every ```python block of README.md and docs/*.md runs as a script, offline, as shown.

The convention (written down in docs/README.md): an HTML comment on the line
right before a block changes how it runs.

- ``<!-- snippet: skip (why) -->``: not run; the reason in parentheses is
  required, and README blocks may not be skipped.
- ``<!-- snippet: continues -->``: the block is a fragment; it runs appended
  to the page's previous block (which also runs alone).

Each block runs in a fresh directory with the project's Python and no
provider API keys. It must exit 0, write nothing to stderr, and leave only
files its page names (a page that says "saved in trips.sqlite" may leave it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TIMEOUT = 120
"""Seconds a block may take; the local model loads in about one."""

MARKER = re.compile(r"^<!--\s*snippet:\s*(?P<body>.*?)\s*-->\s*$")
SKIP = re.compile(r"^skip\s*\((?P<reason>.*\S.*)\)$")
LOCAL_MODEL = re.compile(r"LocalLlamaModel|[\"']local[\"']|\.gguf[\"']")
NEEDS = (
    (LOCAL_MODEL, pytest.mark.local_model),
    (re.compile(r"PgCheckpointer|postgresql://"), pytest.mark.postgres),
    (re.compile(r"redis://"), pytest.mark.redis),
)
"""What a block's code mentions -> the test marker it needs."""
SQLITE_SIDE_FILES = re.compile(r"-(wal|shm|journal)$")


@dataclass(frozen=True)
class Snippet:
    """One runnable python block: the code to run (continuations included) and how."""

    page: Path
    line: int
    """1-based line of the opening fence."""
    code: str
    skip: str | None = None
    """Why the block is not run, or None."""

    @property
    def name(self) -> str:
        return f"{_label(self.page)}:{self.line}"


def _label(page: Path) -> str:
    return str(page.relative_to(REPO)) if page.is_relative_to(REPO) else page.name


def read_snippets(page: Path) -> tuple[list[Snippet], list[str]]:
    """The page's python blocks, and the problems found in its snippet markers."""
    lines = page.read_text().splitlines()
    snippets: list[Snippet] = []
    problems: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```python":
            index += 1
            continue
        start = index
        end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == "```"), None)
        where = f"{_label(page)}:{start + 1}"
        if end is None:
            problems.append(f"{where}: the block is never closed")
            break
        code = textwrap.dedent("\n".join(lines[start + 1 : end])) + "\n"
        marker = MARKER.match(lines[start - 1].strip()) if start else None
        body = marker.group("body") if marker else ""
        skip: str | None = None
        if body == "continues":
            if not snippets:
                problems.append(f"{where}: 'continues' but no block comes before it")
            else:
                previous = snippets[-1]
                code = previous.code + "\n" + code
                skip = previous.skip
        elif body.startswith("skip"):
            found = SKIP.match(body)
            if found is None:
                problems.append(f"{where}: a skip must give its reason: 'skip (why)'")
            else:
                skip = found.group("reason").strip()
        elif marker is not None:
            problems.append(f"{where}: unknown snippet marker {body!r}")
        snippets.append(Snippet(page, start + 1, code, skip))
        index = end + 1
    return snippets, problems


def all_snippets() -> tuple[list[Snippet], list[str]]:
    snippets: list[Snippet] = []
    problems: list[str] = []
    for page in PAGES:
        found, wrong = read_snippets(page)
        snippets += found
        problems += wrong
    return snippets, problems


SNIPPETS, PROBLEMS = all_snippets()


def _param(snippet: Snippet) -> object:
    marks = [mark for pattern, mark in NEEDS if pattern.search(snippet.code)]
    if snippet.skip is not None:
        marks.append(pytest.mark.skip(reason=snippet.skip))
    return pytest.param(snippet, id=snippet.name, marks=marks)


def test_markers_are_well_formed() -> None:
    assert PROBLEMS == []


def test_readme_blocks_are_never_skipped() -> None:
    readme = [s for s in SNIPPETS if s.page == REPO / "README.md"]
    assert len(readme) >= 2  # "What it is" and the tour
    assert [s.name for s in readme if s.skip is not None] == []


def test_markers_are_read(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n```python\na = 1\n```\n\n<!-- snippet: continues -->\n```python\n"
        "print(a)\n```\n\n<!-- snippet: skip (needs an OpenAI key) -->\n```python\nb\n```\n"
        "<!-- snippet: continues -->\n```python\nc\n```\n<!-- snippet: skip -->\n"
        "```python\nd\n```\n<!-- snippet: later -->\n```python\ne\n```\n"
    )
    snippets, problems = read_snippets(page)
    assert [(s.line, s.code, s.skip) for s in snippets] == [
        (3, "a = 1\n", None),
        (8, "a = 1\n\nprint(a)\n", None),
        (13, "b\n", "needs an OpenAI key"),
        (17, "b\n\nc\n", "needs an OpenAI key"),
        (21, "d\n", None),
        (25, "e\n", None),
    ]
    assert len(problems) == 2
    assert "skip must give its reason" in problems[0]
    assert "unknown snippet marker 'later'" in problems[1]


@pytest.mark.parametrize("snippet", [_param(s) for s in SNIPPETS])
def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    if LOCAL_MODEL.search(snippet.code):
        pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    script = tmp_path / "snippet.py"
    script.write_text(snippet.code)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(REPO)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, f"{snippet.name} failed:\n{result.stderr}"
    assert result.stderr == "", f"{snippet.name} wrote to stderr:\n{result.stderr}"
    text = snippet.page.read_text()
    left = sorted(SQLITE_SIDE_FILES.sub("", path.name) for path in cwd.iterdir())
    unnamed = [name for name in left if name not in text]
    assert unnamed == [], f"{snippet.name} left files its page does not mention: {unnamed}"
