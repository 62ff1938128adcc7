"""The benchmark charts: drawn from a small fabricated results dict, never by running benchmarks."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from bench.charts import write_charts

SVG = "{http://www.w3.org/2000/svg}"


def results() -> dict[str, dict[str, Any]]:
    by_size = {
        backend: {
            "by_size": {
                size: {"turn_ms": turn}
                for size, turn in zip(("10", "1000", "10000", "100000"), turns, strict=True)
            }
        }
        for backend, turns in (
            ("memory", [0.05, 0.05, 0.06, 0.05]),
            ("sqlite", [0.2, 0.21, 0.2, 0.22]),
        )
    }
    return {
        "w2_scaling": by_size,
        "floors": {
            "w2_turn_ms": 0.12,
            "w6": {"held_bytes_per_message": 180, "stored_bytes_per_message": 150},
        },
        "w6_invoke": {
            "held_bytes_per_message": 390,
            "stored_bytes_per_message": 240,
            "anchor_stored_bytes_per_message": 276,
        },
    }


def texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()  # valid XML, or this raises
    assert root.tag == f"{SVG}svg"
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_both_charts_are_valid_svg_with_their_labels(tmp_path: Path) -> None:
    written = write_charts(tmp_path, results())
    assert [p.name for p in written] == ["w2_scaling.svg", "w6_memory.svg"]
    scaling = " ".join(texts(tmp_path / "w2_scaling.svg"))
    for label in (
        "tenxgraph, in memory",
        "tenxgraph, SQLite",
        "floor: plain sqlite3 turn",
        "messages already in the thread",
    ):
        assert label in scaling
    memory = texts(tmp_path / "w6_memory.svg")
    assert {"390", "240", "180", "150", "276"} <= set(memory)  # each bar's figure


def test_the_same_figures_give_the_same_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write_charts(first, results())
    write_charts(second, results())
    for name in ("w2_scaling.svg", "w6_memory.svg"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def test_a_chart_without_its_figures_is_not_written(tmp_path: Path) -> None:
    partial = {"w2_scaling": results()["w2_scaling"], "w6_invoke": {"error": "boom"}}
    (tmp_path / "w6_memory.svg").write_text("previous run")
    assert [p.name for p in write_charts(tmp_path, partial)] == ["w2_scaling.svg"]
    assert (tmp_path / "w6_memory.svg").read_text() == "previous run"
    assert write_charts(tmp_path, {}) == []
