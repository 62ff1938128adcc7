"""Our side of the peers: run each peer's counterpart of one of our workloads in the peers
venv (``make peers`` creates it in ``.cache/peers``), right after ours, so both figures
come from the same run. Standard library only: the peers' packages are not in our venv.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from bench.peers import PEERS

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".cache" / "peers"
MISSING = "peer figures not measured: no peers venv in .cache/peers (`make peers` installs it)"


def python() -> Path | None:
    """The peers venv's interpreter, or None until ``make peers`` has installed it whole
    (its stamp file is written after the install)."""
    path = VENV / "bin" / "python"
    return path if (VENV / ".installed").exists() and path.exists() else None


def measure(workload: str) -> dict[str, dict[str, Any]]:
    """Each peer's figures for ``workload`` (peers without a counterpart left out).

    A peer that fails gives ``{"error": ...}`` with the end of its stderr, and the other
    peers still run.
    """
    interpreter = python()
    if interpreter is None:
        return {}
    results: dict[str, dict[str, Any]] = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for peer, (_, workloads) in PEERS.items():
        if workload not in workloads:
            continue
        child = subprocess.run(
            [str(interpreter), "-m", "bench.peers", peer, workload],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
            env=env,
        )
        if child.returncode != 0:
            tail = " ".join(child.stderr.strip().splitlines()[-2:])
            results[peer] = {"error": f"{workload} exited {child.returncode}: {tail}"}
        else:
            results[peer] = dict(json.loads(child.stdout))
    return results


def merge(into: dict[str, dict[str, Any]], measured: dict[str, dict[str, Any]]) -> None:
    """Fold one workload's peer results into the run's ``results["peers"]``."""
    for peer, result in measured.items():
        entry = into.setdefault(peer, {"figures": {}, "notes": {}, "errors": []})
        if "error" in result:
            entry["errors"].append(result["error"])
            continue
        entry["version"] = result["version"]
        entry["figures"].update(result["figures"])
        entry["notes"].update(result["notes"])
