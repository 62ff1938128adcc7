"""Charts of a benchmark run, written as SVG next to the README by ``make bench``.

They read the same results dict the table is made from (``report.py``):

- ``w2_scaling.svg``: the per-turn time of ``invoke`` against the thread's length (10 to
  100,000 messages), in memory and on SQLite, next to the plain-``sqlite3`` floor of one
  turn (``floors.w2_turn_ms``, which does not depend on the length).
- ``w6_memory.svg``: bytes per message, held in memory and stored on SQLite (W6), next
  to their floors and to openai-agents' stored figure.

A chart whose figures the run lacks (a partial ``python -m bench w1_invoke --readme``,
a failed workload) is not written, so the previous one stays. matplotlib comes with
the ``dev`` extra and is imported only here; the SVG carries no date and fixed ids, so
an unchanged figure gives an unchanged file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.report import Results, value

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["CHARTS", "memory_chart", "scaling_chart", "write_charts"]

SIZES = ("10", "1000", "10000", "100000")
CHARTS = ("w2_scaling.svg", "w6_memory.svg")
_BACKENDS = (("memory", "tenxgraph, in memory", "o-"), ("sqlite", "tenxgraph, SQLite", "s-"))


def _figure() -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(7, 4), layout="constrained")


def scaling_chart(results: Results) -> Figure | None:
    """Per-turn ms against thread length (log scale), or None without the W2 figures."""
    lines = []
    for backend, label, style in _BACKENDS:
        turns = [value(results, "w2_scaling", backend, "by_size", s, "turn_ms") for s in SIZES]
        known = [turn for turn in turns if turn is not None]
        if len(known) == len(SIZES):
            lines.append((label, style, known))
    if not lines:
        return None
    figure = _figure()
    axes = figure.add_subplot()
    sizes = [int(size) for size in SIZES]
    for label, style, times in lines:
        axes.plot(sizes, times, style, label=label)
    floor = value(results, "floors", "w2_turn_ms")
    if floor is not None:
        axes.axhline(floor, linestyle="--", color="grey", label="floor: plain sqlite3 turn")
    axes.set_xscale("log")
    axes.set_xticks(sizes, ["10", "1k", "10k", "100k"])
    axes.set_ylim(bottom=0)
    axes.set_xlabel("messages already in the thread")
    axes.set_ylabel("ms per turn (median)")
    axes.set_title("W2: per-turn cost against thread length")
    axes.legend()
    axes.grid(True, alpha=0.3)
    return figure


def memory_chart(results: Results) -> Figure | None:
    """Bytes per message held and stored, ours next to the floors, or None without W6."""
    held = value(results, "w6_invoke", "held_bytes_per_message")
    stored = value(results, "w6_invoke", "stored_bytes_per_message")
    if held is None or stored is None:
        return None
    groups = ["held in memory", "stored on SQLite"]
    bars: list[tuple[str, list[float | None]]] = [
        ("tenxgraph", [held, stored]),
        (
            "floor (compact JSON)",
            [
                value(results, "floors", "w6", "held_bytes_per_message"),
                value(results, "floors", "w6", "stored_bytes_per_message"),
            ],
        ),
        (
            "openai-agents (stored)",
            [None, value(results, "w6_invoke", "anchor_stored_bytes_per_message")],
        ),
    ]
    figure = _figure()
    axes = figure.add_subplot()
    width = 0.8 / len(bars)
    for index, (label, figures) in enumerate(bars):
        xs = [g + (index - (len(bars) - 1) / 2) * width for g in range(len(groups))]
        present = [(x, f) for x, f in zip(xs, figures, strict=True) if f is not None]
        if present:
            drawn = axes.bar([x for x, _ in present], [f for _, f in present], width, label=label)
            axes.bar_label(drawn, fmt="%.0f")
    axes.set_xticks(range(len(groups)), groups)
    axes.set_ylabel("bytes per message")
    axes.set_title("W6: memory per message (100 threads x 1,000 messages)")
    axes.legend()
    return figure


def write_charts(directory: Path, results: Results) -> list[Path]:
    """Write the charts the results allow into ``directory``; return the files written."""
    import matplotlib

    written = []
    with matplotlib.rc_context({"svg.hashsalt": "tenxgraph-bench", "svg.fonttype": "none"}):
        for name, make in zip(CHARTS, (scaling_chart, memory_chart), strict=True):
            figure = make(results)
            if figure is None:
                continue
            path = directory / name
            metadata: dict[str, Any] = {"Date": None, "Creator": "tenxgraph bench/charts.py"}
            figure.savefig(path, format="svg", metadata=metadata)
            written.append(path)
    return written
