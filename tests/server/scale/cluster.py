"""Several ``tenxgraph serve`` processes over one private Postgres database and Redis prefix.

``Cluster`` makes a database of its own (dropped at the end), starts
workers on free 127.0.0.1 ports serving ``scale_graph:graph`` with
``--postgres`` and ``--redis``, kills them (SIGKILL) or stops them
(SIGTERM: graceful shutdown), and deletes its Redis keys (never a flush).
Used by the slow scale-out tests and by ``bench/w10_scale.py``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"
HERE = Path(__file__).parent
TENXGRAPH = Path(sys.executable).with_name("tenxgraph")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """Workers sharing one database; use as a context manager."""

    def __init__(
        self, workdir: Path, *, env: dict[str, str] | None = None, redis_url: str = REDIS_URL
    ) -> None:
        """``redis_url``: the shared Redis by default, or a private one a test stops."""
        self.redis_url = redis_url
        self.name = f"tg_scale_{uuid.uuid4().hex[:10]}"
        self.dsn = PG_ADMIN.rsplit("/", 1)[0] + f"/{self.name}"
        self.prefix = f"{self.name}:"
        self.tag = uuid.uuid4().hex[:8]
        """Start thread ids with it: the thread cache's keys of those are deleted at the end."""
        self.workdir = workdir
        self.ledger = workdir / "ledger.txt"
        self.env = {
            **os.environ,
            # the scale graph, then the caller's path: a checkout's workers run its own code
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
            "SCALE_LEDGER": str(self.ledger),
            "TENXGRAPH_SERVE_STREAM_PREFIX": self.prefix,
            "TENXGRAPH_SERVE_RUN_LEASE": "2",
            **(env or {}),
        }
        self.workers: list[tuple[subprocess.Popen[bytes], str]] = []

    def __enter__(self) -> Cluster:
        import psycopg

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def __exit__(self, *exc: Any) -> None:
        for process, _ in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process, _ in self.workers:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._drop()

    def _drop(self) -> None:
        import psycopg
        import redis

        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        if self.redis_url != REDIS_URL:  # a private Redis: it goes with its test
            return
        client = redis.Redis.from_url(REDIS_URL)
        try:
            for pattern in (f"{self.prefix}*", f"tenxgraph:*:default:{self.tag}-*"):
                keys = list(client.scan_iter(match=pattern, count=1000))
                if keys:
                    client.delete(*keys)
        finally:
            client.close()

    def start(self, count: int) -> list[str]:
        """Start ``count`` workers; their base URLs once each answers."""
        urls = []
        for _ in range(count):
            port = free_port()
            command = [str(TENXGRAPH), "serve", "scale_graph:graph", "--postgres", self.dsn]
            command += ["--redis", self.redis_url, "--host", "127.0.0.1", "--port", str(port)]
            with (self.workdir / f"worker-{port}.log").open("wb") as log:
                process = subprocess.Popen(command, env=self.env, stdout=log, stderr=log)
            url = f"http://127.0.0.1:{port}"
            self.workers.append((process, url))
            urls.append(url)
        for url in urls:
            self._wait_ready(url)
        return urls

    def _wait_ready(self, url: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"worker {url} did not start; see {self.workdir}")

    def kill(self, url: str, sig: signal.Signals = signal.SIGKILL) -> float:
        """Send ``sig`` to the worker at ``url`` and wait for it to end; when it was sent."""
        for process, known in self.workers:
            if known == url:
                process.send_signal(sig)
                sent = time.time()
                process.wait(60)
                return sent
        raise KeyError(url)

    def rows(self) -> dict[str, tuple[str, int]]:
        """The run table: run id -> (status, attempts)."""
        return {
            run_id: (status, attempts) for run_id, (status, attempts, _) in self.table().items()
        }

    def table(self) -> dict[str, tuple[str, int, str]]:
        """The run table: run id -> (status, attempts, thread id)."""
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            rows = conn.execute(
                "SELECT run_id, status, attempts, thread_id FROM tenxgraph.server_runs"
            )
            return {str(r): (str(s), int(a), str(t)) for r, s, a, t in rows.fetchall()}

    def held_by(self, url: str) -> list[str]:
        """The runs the worker at ``url`` runs now: pending or running, its pid in the ledger.

        No row names a worker (a running run's owner is its thread's lease),
        so the scale graph's tool ledger tells: the pid that last started a
        tool call of the run's job (threads are ``<tag>-K`` for job ``K``).
        """
        pid = next(p.pid for p, known in self.workers if known == url)
        last: dict[str, int] = {}
        for what, key, _, by in self.ledger_lines():
            if what == "start":
                last[key.split("-")[0]] = by
        return [
            r
            for r, (s, _, thread) in self.table().items()
            if s in ("pending", "running") and last.get(thread.rsplit("-", 1)[-1]) == pid
        ]

    def ledger_lines(self) -> list[tuple[str, str, float, int]]:
        """The tool's ledger: (start|end, key, time, pid)."""
        if not self.ledger.exists():
            return []
        out = []
        for line in self.ledger.read_text().splitlines():
            what, key, at, pid = line.split()
            out.append((what, key, float(at), int(pid)))
        return out
