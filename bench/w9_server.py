"""W9 server: streamed runs over HTTP against the same graph called in process.

The graph: ``create_agent`` over a ``FunctionModel`` that answers one short
line (streamed as a few chunks), on ``SqliteCheckpointer``; each run starts a
new thread. The server (``create_app``, uvicorn, one worker) runs in a
process of its own on 127.0.0.1; the client is httpx in this process. Every
run streams ``stream_mode=["updates", "messages-tuple"]``.

- In process: ``graph.astream`` drained, one run after another: the median
  time per run.
- Sequential over HTTP: ``POST /threads/{id}/runs/stream`` read to its
  ``end`` event, one after another: the median per run. The server's
  overhead per run is this minus the in-process median (target: <= 2 ms p50).
  The two alternate in blocks of 20, so both see the same machine load.
  Also the CPU time per run: of this process for the in-process runs (all
  its threads, SQLite's included), of the server process for the HTTP runs
  (from ``/proc``), which a loaded machine stretches less than wall time.
- The bare endpoint (``bare_app``) in a server process of its own, read by the
  same client in the same alternating blocks: its CPU per streamed run is the
  floor of the server's (target: <= 1.2x), its median the HTTP round trip alone.
- Concurrent: 200 streams opened at once: time to the first event (the run's
  ``metadata``) and to the ``end`` event, p50 and p99; errors (any status but
  200, a broken stream); lost events (ids not 1..n without a gap, a missing
  ``end``, or another count of events than the in-process run yields).

Run: ``python -m bench.w9_server`` (the server is started and stopped here).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tenxgraph.core.graph import CompiledGraph, create_agent
from tenxgraph.core.llm import FunctionModel, ModelRequest
from tenxgraph.core.state import AgentState
from tenxgraph.storage.checkpointer import SqliteCheckpointer

CONCURRENT = 200
SEQUENTIAL = 200
WARMUP = 20
BLOCKS = 10
MODES = ["updates", "messages-tuple"]
DB_ENV = "TENXGRAPH_W9_DB"


def reply(request: ModelRequest) -> str:
    """The scripted model: one short answer."""
    return "Hello! The server streams this answer."


def make_graph(path: str) -> CompiledGraph[AgentState]:
    return create_agent(FunctionModel(reply), checkpointer=SqliteCheckpointer(path))


def app() -> Any:
    """The served app (``uvicorn --factory bench.w9_server:app``)."""
    from tenxgraph.server.app import create_app

    return create_app(make_graph(os.environ[DB_ENV]), graph_id="agent")


def bare_app() -> Any:
    """A bare FastAPI + sse-starlette endpoint streaming the same events (``--factory``).

    The floor W9's server CPU is compared with: the same path and body, the
    same 10 events with ids (a run's data, recorded), one ``ServerSentEvent``
    per event, sse-starlette's defaults; no graph, no storage, no middleware.
    """
    from fastapi import FastAPI
    from sse_starlette import EventSourceResponse, ServerSentEvent

    bare = FastAPI()
    run_id, thread_id = str(uuid.uuid4()), str(uuid.uuid4())
    meta = {"langgraph_node": "agent", "run_id": run_id, "thread_id": thread_id}
    words = ["Hello! ", "The ", "server ", "streams ", "this ", "answer."]
    chunk = {"additional_kwargs": {}, "response_metadata": {}, "type": "AIMessageChunk"}
    chunk |= {"id": uuid.uuid4().hex, "tool_calls": [], "invalid_tool_calls": []}
    events: list[tuple[str, Any]] = [("metadata", {"run_id": run_id, "attempt": 1})]
    events += [("messages", [{"content": w, **chunk, "tool_call_chunks": []}, meta]) for w in words]
    usage = {"input_tokens": 2, "output_tokens": 10, "total_tokens": 12}
    last = {**chunk, "content": "", "usage_metadata": usage, "chunk_position": "last"}
    events.append(("messages", [last, meta]))
    whole = {**chunk, "content": "".join(words), "type": "ai", "usage_metadata": usage}
    events += [("updates", {"agent": {"messages": [whole]}}), ("end", None)]
    texts = [(name, json.dumps(data, separators=(",", ":"))) for name, data in events]

    @bare.get("/ok")
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    @bare.post("/threads/{thread_id}/runs/stream")
    async def stream(thread_id: str, body: dict[str, Any]) -> EventSourceResponse:
        async def events() -> Any:
            for number, (name, data) in enumerate(texts, 1):
                yield ServerSentEvent(data=data, event=name, id=str(number))

        return EventSourceResponse(events())

    return bare


def _body(text: str) -> dict[str, Any]:
    return {
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": text}]},
        "stream_mode": MODES,
        "if_not_exists": "create",
    }


async def _local_run(graph: CompiledGraph[AgentState], index: int) -> tuple[float, int]:
    """One drained ``astream`` on a new thread: seconds, and how many events it yielded."""
    start = time.perf_counter()
    count = 0
    config = {"thread_id": f"local-{index}"}
    async for _ in graph.astream({"messages": [("user", "hello")]}, config):
        count += 1
    return time.perf_counter() - start, count


async def _stream_once(client: httpx.AsyncClient, expected: int) -> tuple[float, float, str]:
    """One streamed run: seconds to the first event and to ``end``; a problem, or ``""``."""
    start = time.perf_counter()
    first = 0.0
    ids: list[int] = []
    kinds: list[str] = []
    path = f"/threads/{uuid.uuid4()}/runs/stream"
    async with client.stream("POST", path, json=_body("hello")) as response:
        if response.status_code != 200:
            return 0.0, 0.0, f"status {response.status_code}"
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                if not ids:
                    first = time.perf_counter() - start
                ids.append(int(line[3:]))
            elif line.startswith("event:"):
                kinds.append(line[6:].strip())
    total = time.perf_counter() - start
    if ids != list(range(1, len(ids) + 1)) or not kinds or kinds[-1] != "end":
        return first, total, "lost"
    if len(ids) != expected:  # metadata + the run's events + end
        return first, total, "lost"
    return first, total, ""


@contextlib.contextmanager
def _serving(path: str, factory: str) -> Iterator[tuple[int, str]]:
    """``bench.w9_server:<factory>`` served by uvicorn in a process: its pid and URL."""
    server, url = _start_server(path, factory)
    try:
        yield server.pid, url
    finally:
        server.terminate()
        server.wait(10)


def _start_server(path: str, factory: str) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", f"bench.w9_server:{factory}", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    env = {**os.environ, DB_ENV: path}
    server = subprocess.Popen(command, env=env, cwd=Path(__file__).parents[1])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return server, url
        except httpx.TransportError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the W9 server did not start")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _block(
    client: httpx.AsyncClient, pid: int, expected: int, into: list[tuple[float, float, str]]
) -> float:
    """One block of sequential streamed runs into ``into``: the server ``pid``'s CPU seconds."""
    cpu = _cpu_seconds(pid)
    for _ in range(SEQUENTIAL // BLOCKS):
        into.append(await _stream_once(client, expected))
    return _cpu_seconds(pid) - cpu


async def _measure(
    url: str, local_path: str, server_pid: int, bare: tuple[int, str]
) -> dict[str, Any]:
    """Sequential runs in process, over HTTP and on the bare endpoint in alternating
    blocks, then the 200 at once.

    Alternating keeps all three under the same load when other processes
    share the machine: the overhead is the difference of the first two medians.
    """
    graph = make_graph(local_path)
    limits = httpx.Limits(max_connections=CONCURRENT + 10, max_keepalive_connections=CONCURRENT)
    local: list[float] = []
    sequential: list[tuple[float, float, str]] = []
    bare_runs: list[tuple[float, float, str]] = []
    bare_pid, bare_url = bare
    async with (
        httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client,
        httpx.AsyncClient(base_url=bare_url, timeout=120) as bare_client,
    ):
        _, count = await _local_run(graph, -1)
        expected = count + 1  # metadata + the run's events + end, less the RunResult
        for index in range(WARMUP):
            await _local_run(graph, -2 - index)
            await _stream_once(client, expected)
            await _stream_once(bare_client, expected)
        local_cpu = server_cpu = bare_cpu = 0.0
        for block in range(BLOCKS):
            cpu = time.process_time()
            for index in range(SEQUENTIAL // BLOCKS):
                local.append((await _local_run(graph, block * 1000 + index))[0])
            local_cpu += time.process_time() - cpu
            server_cpu += await _block(client, server_pid, expected, sequential)
            bare_cpu += await _block(bare_client, bare_pid, expected, bare_runs)
        started, cpu = time.perf_counter(), _cpu_seconds(server_pid)
        concurrent = await asyncio.gather(
            *(_stream_once(client, expected) for _ in range(CONCURRENT)), return_exceptions=True
        )
        wall = time.perf_counter() - started
        concurrent_cpu = _cpu_seconds(server_pid) - cpu
    assert graph.checkpointer is not None
    await graph.checkpointer.aclose()
    done = [item for item in concurrent if isinstance(item, tuple)]
    errors = [item for item in concurrent if not isinstance(item, tuple)]
    problems = [problem for *_, problem in done + sequential + bare_runs if problem]
    firsts = [first * 1e3 for first, _, problem in done if not problem]
    totals = [total * 1e3 for _, total, problem in done if not problem]
    in_process = statistics.median(local) * 1e3
    over_http = statistics.median(total * 1e3 for _, total, _ in sequential)
    return {
        "in_process_ms_p50": in_process,
        "sequential_ms_p50": over_http,
        "overhead_ms_p50": over_http - in_process,
        "in_process_cpu_ms_per_run": local_cpu / SEQUENTIAL * 1e3,
        "server_cpu_ms_per_run": server_cpu / SEQUENTIAL * 1e3,
        "bare_ms_p50": statistics.median(total * 1e3 for _, total, _ in bare_runs),
        "bare_server_cpu_ms_per_run": bare_cpu / SEQUENTIAL * 1e3,
        "concurrent_runs": CONCURRENT,
        "concurrent_server_cpu_ms_per_run": concurrent_cpu / CONCURRENT * 1e3,
        "concurrent_wall_s": wall,
        "first_event_ms_p50": _percentile(firsts, 0.5),
        "first_event_ms_p99": _percentile(firsts, 0.99),
        "end_ms_p50": _percentile(totals, 0.5),
        "end_ms_p99": _percentile(totals, 0.99),
        "errors": len(errors) + sum(1 for p in problems if p.startswith("status")),
        "lost_event_runs": sum(1 for p in problems if p == "lost"),
        "events_per_run": expected,
        "load_average_1min": os.getloadavg()[0],
    }


def run() -> dict[str, Any]:
    """Measure in process, over HTTP against a server process and on the bare endpoint."""
    with (
        tempfile.TemporaryDirectory() as folder,
        _serving(str(Path(folder) / "served.sqlite"), "app") as (server_pid, url),
        _serving(str(Path(folder) / "unused.sqlite"), "bare_app") as bare,
    ):
        local = str(Path(folder) / "local.sqlite")
        return asyncio.run(_measure(url, local, server_pid, bare))


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
