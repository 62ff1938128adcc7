"""The demo shows its graph once, before the first part, as ``tenxgraph graph`` draws it."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_demo import _demo


def test_the_demo_draws_its_graph_once_at_the_start(tmp_path: Path) -> None:
    result = _demo("--model", "test-echo", tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    listing = (
        "  START\n    -?-> plan\n    -?-> answer\n"
        "  plan  Agent, model test-echo, 1 tool(s)\n    --> tools\n"
        "  tools  ToolNode: select_city\n    --> answer\n"
        "  answer  Agent, model test-echo\n    --> END\n  END\n"
    )
    assert out.count(listing) == 1
    assert out.index(listing) < out.index("== 1. A tool sets a field of your typed state ==")
