"""Private Redis and PostgreSQL servers on spare ports, for tests that stop, hang or kill them.

Fault tests use these, never the shared servers on 5432/6379. Postgres runs
as the ``postgres`` OS user (initdb refuses root) from a data directory the
test owns; Redis runs in the foreground with no persistence.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["PrivatePostgres", "PrivateRedis", "spare_port"]


def spare_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                message = f"nothing listens on 127.0.0.1:{port} after {seconds}s"
                raise TimeoutError(message) from None
            time.sleep(0.02)


class PrivateRedis:
    """``redis-server`` on a spare port, which a test may pause (SIGSTOP), resume or kill."""

    def __init__(self) -> None:
        self.port = spare_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--daemonize", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port)

    def pause(self) -> None:
        """Hang it: the socket stays open and accepts, nothing answers."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self._process is not None:
            self._process.send_signal(signal.SIGCONT)  # a stopped process must run to die
            self._process.kill()
            self._process.wait()
            self._process = None


class PrivatePostgres:
    """A PostgreSQL cluster in ``root`` on a spare port, started and stopped with ``pg_ctl``."""

    def __init__(self, root: Path) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise FileNotFoundError("no /usr/lib/postgresql/*/bin/initdb: install PostgreSQL")
        self._bin = Path(found[-1]).parent
        self.root = root
        self.data = root / "data"
        self.port = spare_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.running = False

    def _as_postgres(self, *command: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *command],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.chown(self.root, "postgres", "postgres")
        os.chmod(self.root, 0o700)
        self._as_postgres(
            str(self._bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust"
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c synchronous_commit=off"
        )
        log = str(self.root / "server.log")
        self._as_postgres(
            str(self._bin / "pg_ctl"), "-D", str(self.data), "-l", log, "-o", options, "-w", "start"
        )
        self.running = True

    def stop(self) -> None:
        """Stop it the way an operator would (``-m fast``: sessions are terminated)."""
        pg_ctl = str(self._bin / "pg_ctl")
        self._as_postgres(pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")
        self.running = False

    def remove(self) -> None:
        if self.running:
            with contextlib.suppress(subprocess.CalledProcessError):
                self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
