"""The TypeScript client (clients/typescript), built and tested with node's own runner.

``npm ci`` installs the locked dev dependency (typescript), ``npm run build``
compiles ``src/`` to ``dist/``, and ``node --test`` runs ``test/*.test.mjs``
against live servers started here: real uvicorn, SQLite (and a media store),
scripted models,
all behind an API key, one of them also behind a proxy that cuts run streams
mid-way. Skipped with the reason when node or npm is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tenxgraph.server.auth import api_keys
from tenxgraph.storage.media import FilesystemMediaStore
from tests.clients.conftest import ServeGraph, clocked, slow, talker, tooled
from tests.clients.proxy import cutting_proxy
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
KEY = "ts-key"
TRACE_ID = "5bf92f3577b34da6a3ce929d0e0e4737"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("node") is None or shutil.which("npm") is None,
        reason="node and npm are needed to build and test the TypeScript client",
    ),
]


def npm(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> str:
    result = subprocess.run(
        ["npm", *args],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"npm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_the_typescript_client_builds_and_passes_its_tests_against_live_servers(
    serve_graph: ServeGraph, tmp_path: Path, spans: Spans
) -> None:
    npm("ci", "--no-audit", "--no-fund")
    npm("run", "build")
    auth = api_keys({KEY: "ts-user"})
    url = serve_graph(talker, authenticate=auth)
    with cutting_proxy(url, cut_after=1500, cuts=1, refuse_resumes=1) as proxy:
        env = {
            **os.environ,
            "TENXGRAPH_URL": url,
            "TENXGRAPH_PROXY_URL": proxy.url,
            "TENXGRAPH_SLOW_URL": serve_graph(slow, authenticate=auth),
            "TENXGRAPH_CLOCK_URL": serve_graph(clocked, authenticate=auth),
            "TENXGRAPH_TOOLS_URL": serve_graph(
                tooled, authenticate=auth, media=FilesystemMediaStore(tmp_path, fsync=False)
            ),
            "TENXGRAPH_API_KEY": KEY,
            "TENXGRAPH_TRACE_ID": TRACE_ID,
        }
        output = npm("test", env=env)
    assert "# fail 0" in output and "# skipped 0" in output, output
    assert "# pass 24" in output, output  # every test ran: 10 without a server, 14 against them
    traced = [s for s in spans.all() if s.context.trace_id == int(TRACE_ID, 16)]
    assert any(span.name.startswith("invoke_agent") for span in traced), spans.tree()
    assert proxy.cut == 1  # the resume test really lost its connection mid-run
    resumed = [head for head in proxy.heads if head.startswith("GET ")]
    assert len(resumed) == 2  # the first resume met a 503 (a restarting server), then again
    assert all("last-event-id:" in head.lower() for head in resumed)
