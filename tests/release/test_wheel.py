"""The release a user installs: the built wheel, in a fresh venv with only the server extra, works.

``python -m build`` makes the sdist and wheel from the checkout, ``twine
check --strict`` reads their metadata as the package index would, and then:

- every file of the package that git tracks is in the wheel and the sdist (a
  new kind of file the package data does not name, such as a web asset in a
  new folder, fails here rather than on a user's machine);
- a fresh venv gets the wheel with the ``server`` extra and nothing else,
  and, run from an empty folder (so the checkout cannot be imported), the
  package imports from the venv with its ``py.typed``, regenerates exactly the
  TypeScript client's committed message schema, and ``tenxgraph serve``
  serves the web page, each of its static files, the offline API docs, and a
  run of a graph.

Slow (a build and an install from the package index, a minute or two).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tenxgraph.testing.server import free_port

REPO = Path(__file__).resolve().parents[2]
STATIC = REPO / "tenxgraph" / "server" / "static"
WAIT = 30.0

pytestmark = pytest.mark.slow
pytest.importorskip("build", reason="the release extra is not installed (build, twine)")
pytest.importorskip("twine", reason="the release extra is not installed (build, twine)")


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and wheel built from the checkout, checked by twine."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], cwd=REPO)
    run([sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())], cwd=out)
    return out


def tracked_package_files() -> set[str]:
    listed = run(["git", "ls-files", "tenxgraph"], cwd=REPO).split()
    return {path for path in listed if (REPO / path).is_file()}


def test_the_wheel_and_sdist_hold_every_file_of_the_package(dist: Path) -> None:
    expected = tracked_package_files()
    assert "tenxgraph/py.typed" in expected
    assert "tenxgraph/server/static/index.html" in expected
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        metadata = next(name for name in in_wheel if name.endswith(".dist-info/METADATA"))
        fields = archive.read(metadata).decode()
    assert sorted(expected - in_wheel) == [], "files missing from the wheel"
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in in_wheel)
    assert "License-Expression: MIT" in fields
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert sorted(expected - in_sdist) == [], "files missing from the sdist"
    for document in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"):
        assert document in in_sdist


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel with the server extra, and nothing else of ours."""
    folder = tmp_path_factory.mktemp("venv")
    (wheel,) = dist.glob("*.whl")
    run([sys.executable, "-m", "venv", str(folder)], cwd=folder)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    run([*pip, f"{wheel}[server]"], cwd=folder, env=_clean_env())
    return folder


def _clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH, so nothing of the checkout can be imported."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


CHECK = """
import importlib.metadata, importlib.resources, json, sys
import tenxgraph
from tenxgraph.core.state import Message

assert sys.prefix in tenxgraph.__file__, tenxgraph.__file__
assert importlib.resources.files("tenxgraph").joinpath("py.typed").is_file()
assert tenxgraph.__version__ == importlib.metadata.version("tenxgraph")
print(json.dumps({"file": tenxgraph.__file__, "message": Message.text_message("hi").text()}))
"""

APP = """
from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel

graph = create_agent(FunctionModel(lambda request: "hello from the wheel"))
"""


def test_the_installed_package_imports_from_the_venv_and_ships_its_schema(
    venv: Path, tmp_path: Path
) -> None:
    python = str(venv / "bin" / "python")
    found = json.loads(run([python, "-c", CHECK], cwd=tmp_path, env=_clean_env()))
    assert found["message"] == "hi"
    assert found["file"].startswith(str(venv))
    typescript = REPO / "clients" / "typescript"
    command = [python, "-m", "tenxgraph.client.schema", "--check", str(typescript)]
    run(command, cwd=tmp_path, env=_clean_env())  # the wheel's Message is the TypeScript one


@contextmanager
def _serving(venv: Path, folder: Path) -> Iterator[str]:
    (folder / "app.py").write_text(APP)
    port = free_port()
    command = [str(venv / "bin" / "tenxgraph"), "serve", "app:graph", "--graph-id", "agent"]
    command += ["--db", "threads.sqlite", "--port", str(port)]
    log = folder / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, cwd=folder, env=_clean_env(), stdout=output, stderr=output
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while _get(f"{url}/ok")[0] != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"tenxgraph serve did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _get(url: str, body: bytes | None = None) -> tuple[int, bytes]:
    headers = {"content-type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return 0, b""


def test_the_installed_server_serves_the_web_page_its_assets_and_a_run(
    venv: Path, tmp_path: Path
) -> None:
    with _serving(venv, tmp_path) as url:
        status, page = _get(url + "/")
        assert status == 200, "the web page is missing from the package"
        referenced = set(re.findall(r'(?:src|href)="(?:\.?/)?static/([^"]+)"', page.decode()))
        assert referenced, "index.html references no static file"
        for path in sorted(STATIC.iterdir()):
            status, served = _get(f"{url}/static/{path.name}")
            assert (status, served) == (200, path.read_bytes()), f"static/{path.name}"
        assert referenced <= {path.name for path in STATIC.iterdir()}
        status, docs = _get(url + "/docs")
        assert status == 200
        assets = re.findall(r'(?:src|href)="(/docs/assets/[^"]+)"', docs.decode())
        assert assets, "the offline /docs page references no asset of its own"
        for asset in assets:
            assert _get(url + asset)[0] == 200, asset
        body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "hi"}]}}
        status, answer = _get(url + "/runs/wait", json.dumps(body).encode())
        assert status == 200, answer
        assert b"hello from the wheel" in answer
