"""W10 scale-out: background runs per second with 1, 2 and 4 ``tenxgraph serve`` workers.

Each configuration gets a fresh private Postgres database and Redis key
prefix (``tests/server/scale/cluster.py``), and N worker processes
``tenxgraph serve scale_graph:graph --postgres ... --redis ...`` on
127.0.0.1 (each its own process and port, as behind a load balancer). The
graph is the scale tests' scripted agent: a ``FunctionModel`` that calls one
tool twice, then answers; the tool sleeps ``TOOL_SECONDS`` (I/O wait, as a
real tool or model call would). ``RUNS`` background runs (each on a new
thread) are posted round robin over the workers at once; the time from the
first post to the last run's end (polled from the run table) gives runs/s.
The scaling ratio is runs/s with N workers over runs/s with 1.

Each worker runs up to ``TENXGRAPH_SERVE_CONSUMERS`` queued runs at once
(its default unless the environment sets it). Target: one worker keeps
enough runs in flight for at least 60 of these I/O-bound runs/s.

Run: ``python -m bench.w10_scale [--workers 1,2,4] [--runs 120] [--lease 2]`` (127.0.0.1
only; nothing is left behind); ``make bench`` runs ``run()``, one worker. The workers run
the code on ``PYTHONPATH``, so two checkouts are compared by running it once with each.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
RUNS = 120
TOOL_SECONDS = 0.2
WORKERS = (1, 2, 4)


def _cluster_module() -> Any:
    sys.path.insert(0, str(ROOT / "tests" / "server" / "scale"))
    return importlib.import_module("cluster")


async def _post_all(urls: list[str], tag: str, runs: int) -> None:
    async with httpx.AsyncClient(timeout=60) as client:

        async def post(k: int) -> None:
            body = {
                "assistant_id": "agent",
                "input": {"messages": [{"role": "user", "content": f"job-{k}"}]},
                "if_not_exists": "create",
            }
            url = urls[k % len(urls)]
            answer = await client.post(f"{url}/threads/{tag}-{k}/runs", json=body)
            answer.raise_for_status()

        await asyncio.gather(*(post(k) for k in range(runs)))


def measure(workers: int, runs: int = RUNS, lease: float = 2.0) -> dict[str, float]:
    """Runs/s of ``runs`` background runs over ``workers`` worker processes.

    ``lease``: the runs' thread lease (the scale tests' 2 s by default); a
    worker renews each running run's lease every third of it.
    """
    cluster_type = _cluster_module().Cluster
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "SCALE_TOOL_SECONDS": str(TOOL_SECONDS),
            "SCALE_LEASE": str(lease),
            "TENXGRAPH_SERVE_RUN_LEASE": str(lease),
        }
        with cluster_type(Path(tmp), env=env) as cluster:
            urls = cluster.start(workers)
            tag = cluster.tag
            pids = [process.pid for process, _ in cluster.workers]
            cpu = sum(map(_cpu_seconds, pids))
            start = time.perf_counter()
            asyncio.run(_post_all(urls, tag, runs))
            posted = time.perf_counter() - start
            peak = 0
            while True:
                rows = cluster.rows()
                peak = max(peak, sum(1 for s, _ in rows.values() if s == "running"))
                done = [s for s, _ in rows.values() if s not in ("pending", "running")]
                if len(done) >= runs:
                    break
                if time.perf_counter() - start > 600:
                    raise RuntimeError(f"only {len(done)} of {runs} runs ended in 600 s")
                time.sleep(0.05)
            seconds = time.perf_counter() - start
            cpu = sum(map(_cpu_seconds, pids)) - cpu
            ok = sum(1 for s, _ in rows.values() if s == "success")
    return {
        "workers": workers,
        "runs": runs,
        "seconds": seconds,
        "runs_per_s": runs / seconds,
        "ok": ok,
        "posted_s": posted,
        "peak_running": peak,
        "worker_cpu_ms_per_run": 1000 * cpu / runs,
    }


def run() -> dict[str, Any]:
    """``make bench``'s W10 row: one worker, 300 runs, 15 s leases (as bench/README's pairs).

    A lease long enough that a busy machine's stalls do not expire it measures
    the worker, not lease takeovers.
    """
    return measure(1, 300, 15.0)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    """Measure each configuration once and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", default=",".join(map(str, WORKERS)))
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--lease", type=float, default=2.0, help="the runs' lease, seconds")
    args = parser.parse_args()
    results = [measure(int(n), args.runs, args.lease) for n in args.workers.split(",")]
    base = results[0]["runs_per_s"] / results[0]["workers"]
    print(f"W10: {args.runs} background runs (2 tool calls of {TOOL_SECONDS}s each), 127.0.0.1")
    print(
        "| workers | seconds | runs/s | runs/s per worker vs 1 | succeeded "
        "| most running at once | workers' CPU per run |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['workers']:.0f} | {r['seconds']:.2f} | {r['runs_per_s']:.1f} "
            f"| {r['runs_per_s'] / r['workers'] / base:.2f}x | {r['ok']:.0f}/{args.runs} "
            f"| {r['peak_running']:.0f} | {r['worker_cpu_ms_per_run']:.1f} ms |"
        )


if __name__ == "__main__":
    main()
