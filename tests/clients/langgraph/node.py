"""The npm package of the JS checks (tests/clients/langgraph_js), installed from its lock file.

``installed()`` runs ``npm ci`` once per test session (``--prefer-offline``:
a warm npm cache installs without the network) and generates
``schema/sdk.json``, the JSON Schema of the SDK's own ``.d.ts`` types that
every JS answer is checked against.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "langgraph_js"

NODE_MAJOR = 20
"""The oldest node the locked packages run on (@langchain/core and p-retry say >= 20)."""


def _node_major() -> int:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return 0
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    try:
        return int(version.stdout.strip().lstrip("v").split(".")[0])
    except ValueError:
        return 0


needs_node = pytest.mark.skipif(
    _node_major() < NODE_MAJOR,
    reason=f"node >= {NODE_MAJOR} and npm are needed to install and run the official JS SDK "
    "(Debian: apt-get install nodejs npm)",
)


def run(*command: str, timeout: float = 300, env: dict[str, str] | None = None) -> str:
    """Run ``command`` in the package; fail the test with its output when it fails."""
    result = subprocess.run(
        list(command),
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


@functools.cache
def installed() -> Path:
    """The package, with ``npm ci`` done and the SDK's schema generated; its folder."""
    run("npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
    run("npm", "run", "-s", "schema")
    return PACKAGE
