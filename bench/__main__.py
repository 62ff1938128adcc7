"""Run the benchmarks: ``python -m bench`` (all), ``python -m bench w1_invoke w3_merge``
(some), each printed as ``name: {json}``. ``python -m bench --readme`` (``make bench``)
also rewrites the generated table in ``bench/README.md`` and the SVG charts next to it
(``bench/charts.py``). ``--peers`` runs the peers' counterparts of each workload
(``bench/peers``, in the venv ``make peers`` creates) right after ours, in the same run;
``--readme`` includes them whenever that venv exists and says so when it does not.
``--json=PATH`` also writes all the figures to PATH, for ``python -m bench.report PATH``.

A workload that fails is reported (traceback on stderr, ``{"error": ...}`` in its line and
in the table) and the others still run, so one broken backend does not hide the rest;
the exit status is then 1.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bench import report
from bench.peers import driver

WORKLOADS = (
    "w1_invoke",
    "w1_checkpointer",
    "w2_turns",
    "w2_graph",
    "w2_scaling",
    "w3_merge",
    "w3_add_messages",
    "w4_resume",
    "w5_trim",
    "w5_long_turn",
    "w6_invoke",
    "w7_media",
    "w8_memory_recall",
    "w9_server",
    "w10_scale",
    "w11_fanout",
    "w12_tracing",
    "startup",
    "floors",
)
README = Path(__file__).with_name("README.md")


def measure(names: list[str], peers: bool = False) -> dict[str, dict[str, Any]]:
    """Run each named workload once, in order, printing its line as it ends; with
    ``peers``, each is followed by the peers' counterparts (``results["peers"]``)."""
    results: dict[str, dict[str, Any]] = {}
    measured_peers: dict[str, dict[str, Any]] = {}
    for name in names:
        start = time.perf_counter()
        try:
            results[name] = importlib.import_module(f"bench.{name}").run()
        except Exception as exc:
            traceback.print_exc()
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        elapsed = time.perf_counter() - start
        print(f"{name}: {json.dumps(results[name])}", flush=True)
        print(f"  ({elapsed:.0f} s)", file=sys.stderr, flush=True)
        if peers:
            start = time.perf_counter()
            for peer, figures in driver.measure(name).items():
                driver.merge(measured_peers, {peer: figures})
                print(f"  {peer} {name}: {json.dumps(figures)}", flush=True)
            print(f"  (peers: {time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    if measured_peers:
        results["peers"] = measured_peers
    return results


def main(argv: list[str]) -> int:
    write = "--readme" in argv
    peers = "--peers" in argv or (write and driver.python() is not None)
    dump = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--json=")), None)
    flags = [arg for arg in argv if arg.startswith("--")]
    names = [arg for arg in argv if arg not in flags] or list(WORKLOADS)
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        print(f"unknown workloads: {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
        return 2
    if (write or "--peers" in argv) and driver.python() is None:
        print(driver.MISSING, file=sys.stderr)
    results = measure(names, peers)
    if dump:
        Path(dump).write_text(json.dumps(results, indent=1), encoding="utf-8")
    if write:
        report.update_readme(README, results)
        print(f"wrote the table in {README}")
        from bench.charts import write_charts  # matplotlib loads only for --readme

        for chart in write_charts(README.parent, results):
            print(f"wrote the chart {chart}")
    failed = any("error" in figures for figures in results.values())
    return 1 if failed or any(p["errors"] for p in results.get("peers", {}).values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
