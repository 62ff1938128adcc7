"""``tenxgraph graph module:graph``: the drawing formats, files, and clear errors."""

from __future__ import annotations

import shutil
import sys
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenxgraph.cli.main import main
from tests.cli.conftest import run_cli

MODULE = """
from tenxgraph.core.graph import StateGraph, create_agent, before_model
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import AgentState


def add(a: int, b: int) -> int:
    '''Add two numbers.'''
    return a + b


@before_model
def guard(state):
    return None


agent = create_agent(ScriptedModel(["hi"]), [add], middleware=[guard])

broken = StateGraph(AgentState)
broken.add_node("a", lambda state: None)
broken.add_node("lost", lambda state: None)
broken.set_entry_point("a")
broken.add_conditional_edges("a", lambda state: "x", {"x": "nowhere"})
"""

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz 'dot' is not installed (apt-get install graphviz); .ci/run installs it",
)


@pytest.fixture
def graphs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"drawgraphs_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the command puts the cwd on sys.path
    yield name
    sys.modules.pop(name, None)


def test_ascii_is_the_default_on_stdout(graphs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", f"{graphs}:agent"]) == 0
    out = capsys.readouterr().out
    assert "guard.before_model  before_model of middleware guard\n  --> agent\n" in out
    assert "tools  ToolNode: add\n  --> guard.before_model\n" in out


def test_collapse_folds_the_middleware(graphs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", f"{graphs}:agent", "--collapse"]) == 0
    out = capsys.readouterr().out
    assert "+ guard.before_model" in out
    assert "  --> guard.before_model" not in out


def test_the_format_follows_the_output_suffix(
    graphs: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "agent.mmd"
    assert main(["graph", f"{graphs}:agent", "-o", str(target)]) == 0
    assert target.read_text().startswith("flowchart TD\n")
    assert f"wrote the mermaid drawing of {graphs}:agent" in capsys.readouterr().out


def test_a_broken_graph_still_draws_with_its_problems(
    graphs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", f"{graphs}:broken", "--format", "mermaid"]) == 0
    out = capsys.readouterr().out
    assert 'lost["lost<br/>(unreachable)"]' in out
    assert 'nowhere["nowhere<br/>(not a node)"]' in out


def test_an_unknown_format_is_a_usage_error() -> None:
    result = run_cli("graph", "x:y", "--format", "jpg")
    assert result.returncode == 2
    assert "argument --format: invalid choice: 'jpg'" in result.stderr


def test_an_unknown_suffix_without_format_is_refused(
    graphs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["graph", f"{graphs}:agent", "-o", "agent.jpg"]) == 1
    err = capsys.readouterr().err
    assert "cannot tell the format from 'agent.jpg': pass --format" in err
    assert not Path("agent.jpg").exists()


def test_a_bad_target_is_reported(graphs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", f"{graphs}:missing"]) == 1
    assert "has no attribute 'missing'" in capsys.readouterr().err


@needs_dot
def test_svg_file_is_valid_xml(graphs: str, tmp_path: Path) -> None:
    target = tmp_path / "agent.svg"
    assert main(["graph", f"{graphs}:agent", "-o", str(target)]) == 0
    assert ET.parse(target).getroot().tag == "{http://www.w3.org/2000/svg}svg"


@needs_dot
def test_png_to_a_file_and_svg_through_a_pipe(graphs: str, tmp_path: Path) -> None:
    target = tmp_path / "agent.png"
    assert main(["graph", f"{graphs}:agent", "--format", "png", "-o", str(target)]) == 0
    assert target.read_bytes().startswith(b"\x89PNG")
    piped = run_cli("graph", f"{graphs}:agent", "--format", "svg", cwd=tmp_path)
    assert piped.returncode == 0, piped.stderr
    assert ET.fromstring(piped.stdout).tag == "{http://www.w3.org/2000/svg}svg"


def test_without_dot_svg_fails_saying_how_to_install_it(
    graphs: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "")
    assert main(["graph", f"{graphs}:agent", "--format", "svg"]) == 1
    err = capsys.readouterr().err
    assert "needs Graphviz's 'dot' program" in err
    assert "apt-get install graphviz" in err
