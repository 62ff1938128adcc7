"""The bench table's peer columns: from fabricated results, never by running benchmarks."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from bench import report
from bench.peers import PEERS, driver

W1 = "W1 3-node graph, per `invoke`, no checkpointer"
W3_SHORT = "W3 public `add_messages(left, [new])`, 1,000"


def measured(**figures: float) -> dict[str, Any]:
    return {
        "w1_invoke": {"invoke_us": 30.0},
        "w3_add_messages": {"add_messages_us_at_1000": 100.0},
        "w6_invoke": {
            "held_bytes_per_message": 380,
            "long_held_bytes_per_message": 2000,
            "stored_bytes_per_message": 500,
        },
        "floors": {"w1_us": 10.0},
        "peers": {
            "langgraph": {
                "version": "1.2.24",
                "figures": figures,
                "notes": {"w6_held_bytes_per_message": "one thread of 1,000"},
                "errors": [],
            }
        },
    }


def line(table: str, workload: str) -> list[str]:
    """The cells of the table row whose first cell is ``workload``."""
    for text in table.splitlines():
        cells = [cell.strip() for cell in text.strip("|").split("|")]
        if cells[0] == workload:
            return cells
    raise AssertionError(f"no row {workload!r}")


def cell(table: str, workload: str, column: str) -> str:
    titles = [title for _, title in report.COLUMNS]
    return line(table, workload)[titles.index(column)]


def test_a_measured_peer_shows_its_figure_name_version_and_our_ratio_to_it() -> None:
    table = report.render(measured(w1_invoke_us=3000.0, w6_held_bytes_per_message=200))
    assert cell(table, W1, "best peer") == "3,000 µs (langgraph 1.2.24)"
    assert cell(table, W1, "ours / peer") == "0.01x"
    held = (
        "W6 bytes held per message, one thread of 10,000 built turn by turn through "
        "`invoke`, in memory (graph alive)"
    )
    assert cell(table, held, "best peer") == "200 B (langgraph 1.2.24, one thread of 1,000)"
    assert cell(table, held, "ours / peer") == "10.0x"
    assert cell(table, held, "verdict") == "**missed**: 1.8x the bound"


def test_a_row_without_a_peer_figure_shows_a_dash_and_the_run_says_peers_did_not_run() -> None:
    results = measured()
    table = report.render(results)
    assert cell(table, W1, "best peer") == "—"
    assert cell(table, W1, "ours / peer") == "—"
    assert "Peer figures were not measured" not in table
    del results["peers"]
    assert "Peer figures were not measured in this run" in report.render(results)


def test_the_best_peer_is_the_lowest_and_a_typed_in_one_says_so() -> None:
    typed = cell(report.render(measured(w3_add_messages_us_at_1000=392.0)), W3_SHORT, "best peer")
    assert typed == "57.0 µs (10xGraph 0.10.3, typed in: not on PyPI)"
    faster = report.render(measured(w3_add_messages_us_at_1000=40.0))
    assert cell(faster, W3_SHORT, "best peer") == "40.0 µs (langgraph 1.2.24)"
    assert cell(faster, W3_SHORT, "ours / peer") == "2.5x"


def test_every_row_has_every_column() -> None:
    table = report.render(measured(w1_invoke_us=3000.0))
    rows = [text for text in table.splitlines() if text.startswith("| W")]
    assert rows and all(text.count("|") == len(report.COLUMNS) + 1 for text in rows)


def test_a_failed_peer_is_named_in_the_notes_and_its_figures_from_other_workloads_stay() -> None:
    peers: dict[str, dict[str, Any]] = {}
    driver.merge(
        peers,
        {"langgraph": {"version": "1.2.24", "figures": {"w1_invoke_us": 900.0}, "notes": {}}},
    )
    driver.merge(peers, {"langgraph": {"error": "w2_graph exited 1: boom"}})
    results = {**measured(), "peers": peers}
    table = report.render(results)
    assert "peer `langgraph` failed: w2_graph exited 1: boom" in table
    assert cell(table, W1, "best peer") == "900 µs (langgraph 1.2.24)"


def test_w1_is_judged_against_the_plain_asyncio_floor_with_the_plain_calls_beside_it() -> None:
    """DESIGN.md's W1 budget names the plain-asyncio floor; an older run has only the calls."""
    results = measured()
    memory = "W1 same graph on `InMemoryCheckpointer`, a fresh thread per `invoke`"
    results["w1_checkpointer"] = {"invoke_us": 70.0}
    results["floors"]["w1_asyncio_us"] = 20.0
    table = report.render(results)
    assert cell(table, W1, "floor") == "20.0 µs (plain asyncio; 10.0 µs as plain calls)"
    assert cell(table, W1, "ours / floor") == "1.5x"
    assert cell(table, W1, "verdict") == "met"
    assert cell(table, memory, "ours / floor") == "3.5x"
    del results["floors"]["w1_asyncio_us"]
    older = report.render(results)
    assert cell(older, W1, "floor") == "10.0 µs"
    assert cell(older, W1, "ours / floor") == "3.0x"
    assert cell(older, memory, "verdict") == "**missed**: 1.2x the bound"


def test_w9_rows_judge_the_server_against_the_bare_endpoint_of_the_same_run() -> None:
    results = measured()
    results["w9_server"] = {
        "overhead_ms_p50": 2.5,
        "bare_ms_p50": 1.9,
        "server_cpu_ms_per_run": 3.0,
        "bare_server_cpu_ms_per_run": 1.0,
        "in_process_cpu_ms_per_run": 1.1,
        "concurrent_runs": 200,
        "first_event_ms_p50": 300.0,
        "end_ms_p50": 900.0,
        "errors": 0,
        "lost_event_runs": 1,
    }
    table = report.render(results)
    overhead = next(r for r in report.rows(results) if r.workload.startswith("W9 server overhead"))
    cpu = next(r for r in report.rows(results) if r.workload.startswith("W9 server CPU"))
    assert (overhead.ours, overhead.floor, overhead.verdict) == (
        "2.50 ms",
        "1.90 ms",
        "**missed**: 1.2x the bound",
    )
    assert (cpu.ratio, cpu.verdict) == ("3.0x", "**missed**: 2.5x the bound")
    assert "0 errors, 1 runs with lost events" in table
    own = next(r for r in report.rows(results) if r.workload.startswith("W9 the server's own"))
    assert (own.ours, own.floor, own.ratio, own.verdict) == ("1.90 ms", "1.00 ms", "1.9x", "info")
    results["w9_server"]["server_cpu_ms_per_run"] = 1.2
    cpu = next(r for r in report.rows(results) if r.workload.startswith("W9 server CPU"))
    assert cpu.verdict == "met"
    del results["w9_server"]
    assert all(r.verdict == "not measured" for r in report.rows(results) if "W9" in r.workload)


def test_w10_is_a_rate_to_reach() -> None:
    results = measured()
    results["w10_scale"] = {"runs_per_s": 61.0, "peak_running": 240, "worker_cpu_ms_per_run": 9.5}
    w10 = next(r for r in report.rows(results) if r.workload.startswith("W10"))
    assert (w10.ours, w10.verdict) == ("61.0 /s, 240, 9.50 ms", "met")
    results["w10_scale"]["runs_per_s"] = 59.0
    assert next(r for r in report.rows(results) if r.workload.startswith("W10")).verdict == (
        "**missed**"
    )


def test_recall_is_a_floor_to_reach_and_a_miss_names_it() -> None:
    results = measured()
    recall = {"vector_minilm": {"paraphrased": 0.8}, "lexical": {"paraphrased": 0.32}}
    results["w8_memory_recall"] = recall

    def vector() -> report.Row:
        rows = report.rows(results)
        return next(
            r for r in rows if r.workload.startswith("W8 recall@5") and "vector" in r.workload
        )

    assert vector().verdict == "met"
    recall["vector_minilm"]["paraphrased"] = 0.76
    assert vector().verdict == "**missed**: 0.76"
    del recall["vector_minilm"]
    assert vector().verdict == "not measured"


def test_update_readme_keeps_the_text_around_the_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{report.BEGIN}\nold\n{report.END}\nafter\n", encoding="utf-8")
    report.update_readme(readme, measured(w1_invoke_us=3000.0))
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "old" not in text
    assert "| best peer | ours / peer |" in text


def test_the_peer_modules_never_import_tenxgraph() -> None:
    """They run in a venv without it; an import would fail there, or time ours instead."""
    folder = Path(driver.__file__).parent
    modules = {path.stem for path in folder.glob("*.py")}
    assert {name.rsplit(".", 1)[1] for name, _ in PEERS.values()} <= modules
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(name.split(".")[0] == "tenxgraph" for name in names), path


def test_without_the_peers_venv_the_run_says_so_and_measures_ours_alone(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    import bench.__main__ as cli

    monkeypatch.setattr(driver, "VENV", tmp_path / "none")
    assert driver.measure("w1_invoke") == {}
    calls: list[tuple[list[str], bool]] = []

    def fake_measure(names: list[str], peers: bool = False) -> dict[str, Any]:
        calls.append((names, peers))
        return {"w1_invoke": {"invoke_us": 30.0}}

    monkeypatch.setattr(cli, "measure", fake_measure)
    dump = tmp_path / "run.json"
    assert cli.main(["--peers", f"--json={dump}", "w1_invoke"]) == 0
    assert calls == [(["w1_invoke"], True)]
    assert driver.MISSING in capsys.readouterr().err
    assert '"invoke_us": 30.0' in dump.read_text(encoding="utf-8")


def test_a_peers_venv_counts_only_once_its_install_finished(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(driver, "VENV", tmp_path)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").touch()
    assert driver.python() is None  # `make peers` stopped before its stamp
    (tmp_path / ".installed").touch()
    assert driver.python() == tmp_path / "bin" / "python"
