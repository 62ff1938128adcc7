"""Run one measurement in a fresh Python process, for workloads that need a cold start."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def run_child(module: str, *args: str) -> dict[str, Any]:
    """Run ``python -m module *args`` and parse the JSON object it prints.

    A failing child raises with the end of its stderr, so the report says why instead
    of only the exit status.
    """
    child = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, check=False
    )
    if child.returncode != 0:
        tail = child.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"{module} {' '.join(args)} exited {child.returncode}: {tail}")
    return dict(json.loads(child.stdout))
