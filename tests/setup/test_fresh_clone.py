"""The README's first command on a fresh clone: ``make demo`` builds its own venv and runs the demo.

This is what a new user does first, so it runs for real: a clone of the
committed tree, a new ``.venv`` made by the Makefile, packages from the
registry, and the real local model. Only the compiled llama-cpp-python wheel
is shared (through ``TENXGRAPH_WHEELHOUSE``), as the README suggests, so the
test does not spend five minutes compiling llama.cpp again.

``HOME`` points at an empty directory that must stay empty: the set-up
writes nothing outside the checkout (no pip cache, no user config). Rust's
tool directory leaves ``PATH``, as on a machine without Rust: pip runs
``rustc --version`` for its user agent, and rustup's proxy then writes
``~/.rustup``; nothing here needs Rust.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.local_model]


def wheelhouse() -> Path:
    """Where `make` compiled llama-cpp-python for this checkout."""
    return Path(os.environ.get("TENXGRAPH_WHEELHOUSE") or REPO / ".cache" / "wheels").resolve()


def test_make_demo_on_a_fresh_clone(tmp_path: Path) -> None:
    if not list(wheelhouse().glob("llama_cpp_python-*.whl")):
        pytest.fail(f"no llama-cpp-python wheel in {wheelhouse()}: run `make install` first")
    clone = tmp_path / "tenxgraph"
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = {
        "PATH": os.pathsep.join(
            entry for entry in os.environ["PATH"].split(os.pathsep) if ".cargo" not in entry
        ),
        "HOME": str(home),
        "TENXGRAPH_WHEELHOUSE": str(wheelhouse()),
        "PYTHON": str(Path(sys.base_prefix) / "bin" / "python3"),
    }
    done = subprocess.run(
        ["make", "demo"], cwd=clone, env=env, capture_output=True, text=True, timeout=900
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "tenxgraph demo" in output
    assert (clone / ".venv" / "bin" / "tenxgraph").exists()
    assert list(home.iterdir()) == [], "the set-up wrote into HOME"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True
    )
    assert status.stdout == "", f"make demo left files git does not ignore:\n{status.stdout}"
    shutil.rmtree(clone / ".venv")
