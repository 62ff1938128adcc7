"""Fixtures of the MCP tests: the SDK-written servers, spare ports, the npm servers."""

from __future__ import annotations

import functools
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the extra 'mcp'")

HERE = Path(__file__).parent
SERVERS = str(HERE / "servers.py")
NODE_DIR = HERE / "node"


def spare_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listened on port {port} within {seconds} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def sdk_command() -> list[str]:
    """The command line of an SDK-written stdio server, without its kind."""
    return [sys.executable, SERVERS]


@pytest.fixture
def http_server() -> Iterator[object]:
    """Start an SDK-written server over HTTP: ``start(kind, transport="http") -> url``.

    ``transport`` is ``"http"`` (streamable HTTP at ``/mcp``) or ``"sse"``
    (HTTP+SSE at ``/sse``).
    """
    started: list[subprocess.Popen[bytes]] = []

    def start(kind: str, transport: str = "http") -> str:
        port = spare_port()
        process = subprocess.Popen([sys.executable, SERVERS, kind, f"--{transport}", str(port)])
        started.append(process)
        wait_for_port(port, process)
        return f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"

    yield start
    for process in started:
        stop(process)


@functools.cache
def _npm_ci() -> str | None:
    """``npm ci`` in tests/mcp/node once per session (a warm cache needs no network); why not."""
    done = subprocess.run(
        ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return None if done.returncode == 0 else f"npm ci failed:\n{done.stdout}\n{done.stderr}"


def node_bin(name: str) -> Path:
    """An executable of tests/mcp/node, installed from its lock file; skips without node and npm."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the npm MCP servers (apt-get install nodejs npm)")
    path = NODE_DIR / "node_modules" / ".bin" / name
    if not path.exists():
        failure = _npm_ci()
        if failure is not None:
            pytest.fail(failure)
    return path
