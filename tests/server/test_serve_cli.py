"""``tenxgraph serve`` as a real subprocess: options, auth rules, one and two workers."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tenxgraph.cli.main import main
from tenxgraph.testing.server import free_port

GRAPH_MODULE = '''
from tenxgraph.core.graph import StateGraph, create_agent
from tenxgraph.core.llm import FunctionModel


def make():
    """A zero-argument factory: the CLI calls it."""
    return create_agent(FunctionModel(lambda request: "ok"))


graph = make()
not_a_graph = 42
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "served_app.py").write_text(GRAPH_MODULE)
    return tmp_path


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tenxgraph.cli", "serve", *args]


@contextmanager
def running(project: Path, *args: str, timeout: float = 30.0) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        command(*args, "--port", str(port)),
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "TENXGRAPH_API_KEYS": ""},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                output = process.stdout.read().decode() if process.stdout else ""
                raise AssertionError(f"serve exited with {process.returncode}: {output}")
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


def test_serve_a_module_graph_with_api_keys(project: Path) -> None:
    db = project / "threads.sqlite"
    with running(project, "served_app:graph", "--db", str(db), "--api-key", "k1=alice") as url:
        headers = {"authorization": "Bearer k1"}
        created = httpx.post(f"{url}/threads", json={"thread_id": "t"}, headers=headers)
        assert created.status_code == 200, created.text
        assert httpx.get(f"{url}/threads/t", headers=headers).json()["thread_id"] == "t"
        assert httpx.get(f"{url}/threads/t").status_code == 401
    assert db.exists()  # the threads are in the file given


@pytest.mark.slow
def test_two_workers_share_the_database(project: Path) -> None:
    db = project / "threads.sqlite"
    args = ("served_app:make", "--db", str(db), "--workers", "2", "--memory")
    with running(project, *args, timeout=60) as url:
        for number in range(6):  # connections land on both workers
            with httpx.Client() as client:
                response = client.post(f"{url}/threads", json={"thread_id": f"t{number}"})
                assert response.status_code == 200, response.text
        listed = httpx.post(f"{url}/threads/search", json={"limit": 100}).json()
        assert sorted(t["thread_id"] for t in listed) == [f"t{n}" for n in range(6)]
        put = httpx.put(f"{url}/store/items", json={"namespace": ["a"], "key": "k", "value": {}})
        assert put.status_code == 204


def answer_of(url: str) -> str:
    """What the served graph answers to one stateless run."""
    body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
    output = httpx.post(f"{url}/runs/wait", json=body, timeout=30).json()
    return str(output["messages"][-1]["content"])


@pytest.mark.slow
def test_reload_serves_the_changed_module(project: Path) -> None:
    with running(project, "served_app:graph", "--db", str(project / "t.sqlite"), "--reload") as url:
        assert "ok" in answer_of(url)
        source = project / "served_app.py"
        source.write_text(GRAPH_MODULE.replace('"ok"', '"changed"'))
        deadline = time.monotonic() + 60
        while True:  # the reloader restarts the worker; requests fail meanwhile
            try:
                if "changed" in answer_of(url):
                    break
            except (httpx.TransportError, KeyError, ValueError):
                pass
            assert time.monotonic() < deadline, "the change was not served"
            time.sleep(0.2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("served_app:graph", "--host", "0.0.0.0"), "no API keys for a server on 0.0.0.0"),
        (("served_app:not_a_graph",), "is not a StateGraph"),
        (("served_app:missing",), "has no attribute 'missing'"),
        (("no_such_module:graph",), "cannot import module 'no_such_module'"),
        (("served_app:graph", "--redis", "redis://x"), "--redis needs --postgres"),
        (("served_app:graph", "--workers", "0"), "--workers must be at least 1"),
        (("served_app:graph", "--api-key", "nonsense"), "not KEY=USER"),
        (("served_app:graph", "--reload", "--workers", "2"), "--reload runs one worker"),
        (("served_app:graph", "--keep-alive", "0"), "--keep-alive must be positive, got 0"),
    ],
)
def test_bad_options_fail_before_listening(
    project: Path,
    args: tuple[str, ...],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "path", [*sys.path])  # the CLI puts the current directory first
    monkeypatch.delitem(sys.modules, "served_app", raising=False)
    monkeypatch.delenv("TENXGRAPH_API_KEYS", raising=False)
    assert main(["serve", *args]) == 1  # in process: each fails before uvicorn starts
    assert message in capsys.readouterr().err


def test_a_served_app_tunes_the_collector_while_it_serves_and_restores_it_at_shutdown(
    serve_env: dict[str, str],
) -> None:
    """``tenxgraph serve``'s app freezes its start-up's objects, collects the young less often."""
    import gc

    from fastapi.testclient import TestClient

    from tenxgraph.server.app import app_from_env

    env = serve_env
    app = app_from_env(env)
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with TestClient(app) as client:
        assert client.get("/ok").status_code == 200
        assert gc.get_freeze_count() > 1000  # the modules, the graph, the app
        assert gc.get_threshold()[0] >= 7_000
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def request_ok(connection: http.client.HTTPConnection) -> int:
    """``GET /ok`` on ``connection`` as it is: no new connection is opened for it."""
    connection.request("GET", "/ok")
    response = connection.getresponse()
    response.read()
    return response.status


def test_an_idle_connection_outlives_the_clients_own_idle_limit(project: Path) -> None:
    """httpx keeps an idle connection 5 s, as uvicorn did: a request sent as the server
    closed it failed with a read error. The server keeps it longer, so a client reusing
    it after its own limit's worth of quiet is answered."""
    with running(project, "served_app:graph", "--db", str(project / "t.sqlite")) as url:
        connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
        assert request_ok(connection) == 200
        opened = connection.sock
        time.sleep(5.5)
        assert request_ok(connection) == 200
        assert connection.sock is opened  # the same connection answered, not a new one
        connection.close()


def test_keep_alive_sets_how_long_an_idle_connection_stays_open(project: Path) -> None:
    args = ("served_app:graph", "--db", str(project / "t.sqlite"), "--keep-alive", "2")
    with running(project, *args) as url:
        connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
        assert request_ok(connection) == 200
        time.sleep(0.2)
        assert request_ok(connection) == 200  # well within the two seconds: kept
        assert connection.sock is not None
        connection.sock.settimeout(30)
        started = time.monotonic()
        assert connection.sock.recv(1) == b""  # then closed by the server, not by this end
        assert time.monotonic() - started < 20  # after its two quiet seconds, not 75
        connection.close()
