"""Build the llama-cpp-python wheel once, with the flags this machine needs, into a wheelhouse.

llama-cpp-python ships only a source archive, so every new environment would
compile llama.cpp again (4-6 minutes on 2 cores). This script compiles it
once into a project-local wheelhouse (``.cache/wheels`` unless
``TENXGRAPH_WHEELHOUSE`` says otherwise) that every later venv installs
from. It always builds with ``CMAKE_ARGS=-DGGML_NATIVE=OFF`` and without
pip's shared cache: a wheel compiled for another CPU, or with native
instructions, segfaults here.

The compiler's output goes to a log file next to the wheels; this script
prints what it is doing, why it takes minutes, and a progress line every
few seconds, so the first ``make demo`` is not minutes of silence.

Usage: ``python scripts/llama_wheel.py WHEELHOUSE VERSION`` (run by the Makefile).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

PROGRESS = re.compile(r"^\s*\[(\d+)/(\d+)\]", re.MULTILINE)
"""Ninja (which the build uses) prints ``[40/193] /usr/bin/g++ ...`` per compiled file."""
REPORT_EVERY = 15.0


def existing_wheel(wheelhouse: Path, version: str) -> Path | None:
    """The wheel of ``version`` already in the wheelhouse, if any."""
    return next(iter(sorted(wheelhouse.glob(f"llama_cpp_python-{version}-*.whl"))), None)


def build(wheelhouse: Path, version: str) -> int:
    """Compile the wheel into ``wheelhouse``, reporting progress; return pip's status."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    log_path = wheelhouse / f"llama-cpp-python-{version}.build.log"
    print(
        f"Building llama-cpp-python {version} from source (the local model's runtime).\n"
        "  This compiles llama.cpp once: about 4-6 minutes on 2 cores. The wheel is kept in\n"
        f"  {wheelhouse}/ and later venvs install it in seconds.\n"
        f"  Flags: CMAKE_ARGS=-DGGML_NATIVE=OFF, no pip cache. Compiler output: {log_path}",
        flush=True,
    )
    env = {**os.environ, "CMAKE_ARGS": "-DGGML_NATIVE=OFF"}
    command = [
        sys.executable, "-m", "pip", "wheel", "--verbose", "--no-cache-dir", "--no-deps",
        "--wheel-dir", str(wheelhouse), f"llama-cpp-python=={version}",
    ]  # fmt: skip
    started = time.monotonic()
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        while process.poll() is None:
            try:
                process.wait(timeout=REPORT_EVERY)
            except subprocess.TimeoutExpired:
                print(f"  ... {_elapsed(started)}, {_progress(log_path)}", flush=True)
    if process.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-30:]
        print("\n".join(["llama-cpp-python failed to build; the end of the log:", *tail]))
        return process.returncode
    print(f"  built in {_elapsed(started)}", flush=True)
    return 0


def _progress(log_path: Path) -> str:
    """The compiler's latest percentage, or the phase before compiling starts."""
    found = PROGRESS.findall(log_path.read_text(errors="replace"))
    if not found:
        return "downloading and configuring"
    done, total = map(int, found[-1])
    return f"compiling file {done} of {total}"


def _elapsed(started: float) -> str:
    seconds = int(time.monotonic() - started)
    return f"{seconds // 60}m{seconds % 60:02d}s"


def main(argv: list[str]) -> int:
    """Build the wheel unless the wheelhouse has it already."""
    wheelhouse, version = Path(argv[0]), argv[1]
    if existing_wheel(wheelhouse, version):
        return 0
    return build(wheelhouse, version)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
