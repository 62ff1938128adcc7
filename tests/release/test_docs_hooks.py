"""The docs site's hooks (scripts/docs_site.py): where an object is documented, links out of docs/.

These run without MkDocs: the hooks are plain functions over Markdown text
and the public API snapshot.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_site", REPO / "scripts" / "docs_site.py")
assert _spec is not None and _spec.loader is not None
docs_site = importlib.util.module_from_spec(_spec)
sys.modules["docs_site"] = docs_site
_spec.loader.exec_module(docs_site)


def test_an_object_is_documented_by_the_module_nearest_to_where_it_is_defined() -> None:
    surface = {
        "pkg": ["Agent"],
        "pkg.core": ["Agent"],
        "pkg.core.graph": ["Agent", "Strategy"],
        "pkg.runs": ["Strategy"],
    }
    targets = {
        ("pkg", "Agent"): "pkg.core.graph._agent.Agent",
        ("pkg.core", "Agent"): "pkg.core.graph._agent.Agent",
        ("pkg.core.graph", "Agent"): "pkg.core.graph._agent.Agent",
        ("pkg.core.graph", "Strategy"): "pkg.runs._leases.Strategy",
        ("pkg.runs", "Strategy"): "pkg.runs._leases.Strategy",
    }
    assert docs_site.homes(surface, targets) == {
        "pkg.core.graph._agent.Agent": "pkg.core.graph",
        "pkg.runs._leases.Strategy": "pkg.runs",  # not the deeper module that re-exports it
    }


def _page_markdown(text: str, repo_url: str | None = None, source: str = "README.md") -> str:
    page = SimpleNamespace(file=SimpleNamespace(src_uri=source))
    config = {"docs_dir": str(REPO / "docs"), "repo_url": repo_url}
    result: str = docs_site.on_page_markdown(text, page, config, files=None)
    return result


def test_a_link_out_of_docs_names_the_file_or_points_at_the_repository() -> None:
    text = "See [the examples](../examples/README.md) and [graphs](graph.md#building).\n"
    named = "the examples (`examples/README.md` in the repository)"
    assert _page_markdown(text) == f"See {named} and [graphs](graph.md#building).\n"
    assert "(https://example.org/x/blob/main/examples/README.md)" in _page_markdown(
        text, repo_url="https://example.org/x/"
    )


def test_a_link_out_of_docs_to_no_file_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.tenxgraph"):
        _page_markdown("A [gone](../no/such/file.md) link.\n")
    assert "points at no file of the repository" in caplog.text  # a warning fails --strict


def test_code_blocks_are_left_alone_and_table_pipes_unescaped() -> None:
    text = (
        "```python\nx = '[a](../nowhere.md)'\n```\n"
        "| field | type |\n|---|---|\n| `context_summary` | `str \\| None` |\n"
        "Outside a table `a \\| b` stays.\n"
    )
    result = _page_markdown(text)
    assert "x = '[a](../nowhere.md)'" in result
    assert "| `context_summary` | `str | None` |" in result
    assert "`a \\| b` stays" in result


def test_the_generated_reference_has_a_page_per_public_module() -> None:
    pytest.importorskip("griffe", reason="the docs extra is not installed")
    surface = docs_site.public_api()
    pages = docs_site.api_pages(surface)
    assert set(pages) == {"api/index.md", *(f"api/{module}.md" for module in surface)}
    graph = pages["api/tenxgraph.core.graph.md"]
    assert "::: tenxgraph.core.graph.StateGraph" in graph
    assert "[`MultitaskStrategy`][tenxgraph.runs.MultitaskStrategy]" in graph
    assert "::: tenxgraph.StateGraph" not in pages["api/tenxgraph.md"]
