"""Fixtures of the MCP tests: the SDK-written servers, spare ports, the npm servers."""

from __future__ import annotations

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
    """Start an SDK-written server over streamable HTTP: ``start(kind) -> url``."""
    started: list[subprocess.Popen[bytes]] = []

    def start(kind: str) -> str:
        port = spare_port()
        process = subprocess.Popen([sys.executable, SERVERS, kind, "--http", str(port)])
        started.append(process)
        wait_for_port(port, process)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for process in started:
        stop(process)


def node_bin(name: str) -> Path:
    """An executable of tests/mcp/node (``npm ci`` there); skips when node or it is missing."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the npm MCP servers cannot run")
    path = NODE_DIR / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.skip(f"{name} is not installed: run `npm ci` in {NODE_DIR}")
    return path
