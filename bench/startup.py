"""Startup: wall time of a fresh process that imports ``tenxgraph.core.graph``, and of
``tenxgraph --help`` (the console script's first output), next to ``python -c pass``.
Target: both under 150 ms.

The package loads its modules lazily, so the bare import loads little; also reported is
``from tenxgraph.core.graph import StateGraph``, the import a program's first line makes,
which loads the runtime and pydantic.

Each is the best of ``RUNS`` subprocess runs, timed from ``Popen`` to exit, so it
includes the interpreter's own start (the ``python -c pass`` row) and the disk cache is
warm after the first run. Bytecode is cached for the runs in a private directory
(``PYTHONPYCACHEPREFIX``), even when the caller sets ``PYTHONDONTWRITEBYTECODE``:
compiling every module on every start is not what a user's process pays. The console
script is the venv's ``tenxgraph`` next to this Python; it runs
``tenxgraph.cli.main:main`` (``python -m tenxgraph.cli`` is the same).

Run: ``python -m bench.startup``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

RUNS = 7


def best_ms(command: list[str], env: dict[str, str]) -> float:
    """Fastest of ``RUNS`` runs of ``command``, in milliseconds; output is discarded."""
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(
            command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        best = min(best, time.perf_counter() - start)
    return round(best * 1e3, 1)


def cli_command() -> list[str]:
    """The installed console script when there is one, else the module form."""
    script = os.path.join(os.path.dirname(sys.executable), "tenxgraph")
    return (
        [script, "--help"]
        if os.path.exists(script)
        else [sys.executable, "-m", "tenxgraph.cli", "--help"]
    )


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tenxgraph-pycache-") as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        return {
            "python_pass_ms": best_ms([sys.executable, "-c", "pass"], env),
            "import_graph_ms": best_ms([sys.executable, "-c", "import tenxgraph.core.graph"], env),
            "import_state_graph_ms": best_ms(
                [sys.executable, "-c", "from tenxgraph.core.graph import StateGraph"], env
            ),
            "cli_help_ms": best_ms(cli_command(), env),
            "runs": RUNS,
        }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
