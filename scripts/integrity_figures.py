"""Kill graph runs with SIGKILL at random moments and print what survived, as a Markdown table.

For each backend, a child process runs turns on one thread (a model step
that asks for 1-2 tool calls on even turns, a tool that logs each start and
end to a file with fsync); the parent kills it 20-300 ms after its first
step, again and again, then lets a last child finish. The table counts the
acknowledged messages lost, duplicated message ids and inputs, whether the
stored log is paired, and how often a tool that had finished ran again (a
kill between its return and the commit of its result). The harness is the
one ``tests/storage/test_kill_runs.py`` runs with fewer kills.

Usage: ``.venv/bin/python scripts/integrity_figures.py [--kills 100] [--backends
sqlite,postgres,postgres+redis]``. The Postgres backends need the shared
PostgreSQL and Redis (``make services``); each run uses its own schema and
Redis prefix and removes them afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.storage import _run_workers
from tests.storage.conftest import PG_DSN, REDIS_URL, drop_redis_keys, drop_schema

BACKENDS = ("sqlite", "postgres", "postgres+redis")
HEADER = (
    "| backend | kills (model / tool / other) | turns | acked | lost | dup. ids | dup. inputs "
    "| paired | calls (results != 1) | tool runs | re-runs | finished re-runs (rate) | "
    "re-runs of a saved result | given up | time |\n|" + "---|" * 15
)


def spec_for(backend: str, work: Path) -> dict[str, Any]:
    """A private store for one run: a SQLite file, or a fresh schema and Redis prefix."""
    if backend == "sqlite":
        return {"kind": backend, "path": str(work / "threads.db")}
    suffix = uuid.uuid4().hex[:12]
    return {
        "kind": backend,
        "dsn": PG_DSN,
        "schema": f"tg_figures_{suffix}",
        "redis_url": REDIS_URL,
        "prefix": f"tg-figures-{suffix}:",
    }


def row(figures: _run_workers.KillFigures) -> str:
    """One table row."""
    phases = figures.phases
    rate = figures.finished_reruns / figures.kills if figures.kills else 0.0
    cells = [
        figures.backend,
        f"{figures.kills} ({phases['model']} / {phases['tool']} / {phases['between']})",
        figures.turns,
        figures.acked,
        len(figures.lost),
        figures.duplicate_ids,
        figures.duplicate_inputs,
        "yes" if figures.paired else "**no**",
        f"{figures.calls} ({len(figures.bad_results)})",
        figures.executions,
        figures.reruns,
        f"{figures.finished_reruns} ({rate:.1%})",
        len(figures.rerun_after_saved),
        figures.given_up,
        f"{figures.seconds:.0f} s",
    ]
    return "| " + " | ".join(map(str, cells)) + " |"


def measure(backend: str, kills: int, seed: int) -> _run_workers.KillFigures:
    """Run the harness on a fresh store of ``backend`` and remove the store afterwards."""
    with tempfile.TemporaryDirectory(prefix="tg-kills-") as directory:
        work = Path(directory)
        spec = spec_for(backend, work)
        try:
            return _run_workers.kill_runs(spec, work, kills, seed=seed)
        finally:
            if backend != "sqlite":
                asyncio.run(drop_schema(spec["schema"]))
            if backend == "postgres+redis":
                asyncio.run(drop_redis_keys(spec["prefix"]))


def main() -> int:
    """Measure each backend, print the rows as they come, then the whole table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="kills per backend")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill timing")
    options = parser.parse_args()
    rows = []
    for backend in options.backends.split(","):
        figures = measure(backend, options.kills, options.seed)
        print(figures.summary(), file=sys.stderr, flush=True)
        rows.append(row(figures))
    machine = f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}"
    print(f"Measured {time.strftime('%Y-%m-%d')} on {machine}.\n")
    print(HEADER)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
