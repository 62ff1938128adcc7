"""The generated table of ``bench/README.md``: ours next to the floor and the issue's target.

``update_readme`` replaces what lies between ``BEGIN`` and ``END`` and leaves the rest of
the file (the hand-written history) alone. Each row says how far ours is from its floor
and whether the target is met; a missed target says by how much (the measured quantity
over its bound), so the gap is visible without opening the raw figures.

Where a peer framework has a counterpart of a row, the row also shows the best (lowest)
peer figure with the peer's name and version, and ours over it: measured in the same run
(``results["peers"]``, from ``bench/peers``) or, for a peer not on PyPI, typed in and
marked so (``TYPED_IN``).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"
Results = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Row:
    workload: str
    ours: str
    floor: str
    ratio: str
    target: str
    verdict: str
    peer: str = "—"
    vs_peer: str = "—"


@dataclass(frozen=True)
class Peer:
    figure: float
    label: str


COLUMNS = (
    ("workload", "workload"),
    ("ours", "ours"),
    ("floor", "floor"),
    ("ratio", "ours / floor"),
    ("peer", "best peer"),
    ("vs_peer", "ours / peer"),
    ("target", "target"),
    ("verdict", "verdict"),
)
TYPED_IN = {
    "w3_add_messages_us_at_1000": Peer(57, "10xGraph 0.10.3, typed in: not on PyPI"),
}
"""Peer figures no run here can measure, from the issue, each said to be typed in."""


def value(results: Results, name: str, *keys: str) -> float | None:
    """The figure at ``results[name][key][...]``, or None when that workload did not run."""
    node: Any = results.get(name)
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) else None


def number(figure: float | None, unit: str = "") -> str:
    if figure is None:
        return "—"
    text = (
        f"{figure:,.0f}" if figure >= 100 else f"{figure:.1f}" if figure >= 10 else f"{figure:.2f}"
    )
    return f"{text} {unit}".rstrip()


def over(ours: float | None, floor: float | None) -> float | None:
    return ours / floor if ours is not None and floor else None


def verdict(checked: float | None, bound: float) -> str:
    if checked is None:
        return "not measured"
    if checked <= bound:
        return "met"
    return f"**missed**: {checked / bound:.1f}x the bound"


def reached(figure: float | None, floor: float, *, show: bool = False) -> str:
    """The verdict of a figure that must reach ``floor`` (a rate, a recall); ``show``
    names the figure in a miss."""
    if figure is None:
        return "not measured"
    if figure >= floor:
        return "met"
    return f"**missed**: {figure:.2f}" if show else "**missed**"


def best_peer(results: Results, key: str) -> Peer | None:
    """The lowest peer figure named ``key``: those measured in this run and any typed in."""
    found = [TYPED_IN[key]] if key in TYPED_IN else []
    for name, peer in results.get("peers", {}).items():
        figure = value(results, "peers", name, "figures", key)
        if figure is not None:
            note = peer.get("notes", {}).get(key)
            label = f"{name} {peer.get('version', '?')}" + (f", {note}" if note else "")
            found.append(Peer(figure, label))
    return min(found, key=lambda peer: peer.figure, default=None)


def times(ratio: float | None) -> str:
    if ratio is None:
        return "—"
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:.2g}x"


def row(
    workload: str,
    ours: float | None,
    floor: float | None,
    unit: str,
    target: tuple[str, float | None, float] | None,
    peer: Peer | None = None,
) -> Row:
    """A row; ``target`` is (its text, the quantity it bounds, the bound), None for info."""
    ratio = over(ours, floor)
    return Row(
        workload,
        number(ours, unit),
        number(floor, unit),
        f"{ratio:.1f}x" if ratio is not None else "—",
        target[0] if target else "—",
        verdict(target[1], target[2]) if target else "info" if ours is not None else "not measured",
        f"{number(peer.figure, unit)} ({peer.label})" if peer else "—",
        times(over(ours, peer.figure if peer else None)),
    )


def w1_rows(r: Results) -> list[Row]:
    """W1 against DESIGN.md's plain-asyncio floor; the plain calls' figure is shown beside it.

    A saved run from before that floor was measured has only the plain calls, which
    then serve as the floor (stricter: no event loop at all).
    """
    calls = value(r, "floors", "w1_us")
    floor = value(r, "floors", "w1_asyncio_us")
    plain = value(r, "w1_invoke", "invoke_us")
    memory = value(r, "w1_checkpointer", "invoke_us")
    if floor is None:
        floor, calls = calls, None
    rows = [
        row(
            "W1 3-node graph, per `invoke`, no checkpointer",
            plain,
            floor,
            "µs",
            ("≤ 3x floor", over(plain, floor), 3),
            best_peer(r, "w1_invoke_us"),
        ),
        row(
            "W1 same graph on `InMemoryCheckpointer`, a fresh thread per `invoke`",
            memory,
            floor,
            "µs",
            ("≤ 6x floor (2x the budget above)", over(memory, floor), 6),
            best_peer(r, "w1_checkpointer_us"),
        ),
    ]
    if calls is None:
        return rows
    note = f" (plain asyncio; {number(calls, 'µs')} as plain calls)"
    return [dataclasses.replace(each, floor=each.floor + note) for each in rows]


def w9_rows(r: Results) -> list[Row]:
    """The server against the bare FastAPI + sse-starlette endpoint read in the same run."""
    overhead = value(r, "w9_server", "overhead_ms_p50")
    round_trip = value(r, "w9_server", "bare_ms_p50")
    cpu = value(r, "w9_server", "server_cpu_ms_per_run")
    bare_cpu = value(r, "w9_server", "bare_server_cpu_ms_per_run")
    in_process = value(r, "w9_server", "in_process_cpu_ms_per_run")
    own = None if cpu is None or in_process is None else round(cpu - in_process, 3)
    return [
        row(
            "W9 server overhead per streamed run, p50 (over HTTP less the same run in process);"
            " floor: the bare endpoint's whole round trip",
            overhead,
            round_trip,
            "ms",
            ("≤ 2 ms", overhead, 2),
        ),
        row(
            "W9 server CPU per streamed run; floor: a bare FastAPI + sse-starlette endpoint"
            " streaming the same 10 events",
            cpu,
            bare_cpu,
            "ms",
            ("≤ 1.2x floor", over(cpu, bare_cpu), 1.2),
        ),
        row(
            "W9 the server's own CPU per streamed run (the row above less the same run's CPU"
            " in process); floor: the bare endpoint",
            own,
            bare_cpu,
            "ms",
            None,
        ),
    ]


def w10_row(r: Results) -> Row:
    """Background runs a second through one worker: a rate to reach (>= 60 /s)."""
    rate = value(r, "w10_scale", "runs_per_s")
    peak = value(r, "w10_scale", "peak_running")
    cpu = value(r, "w10_scale", "worker_cpu_ms_per_run")
    met = reached(rate, 60)
    return Row(
        "W10 one server worker (Postgres + Redis), 300 background runs that each wait on I/O"
        " (2 x 0.2 s): runs/s, the most in flight at once, the worker's CPU per run",
        f"{number(rate, '/s')}, {number(peak)}, {number(cpu, 'ms')}",
        "—",
        "—",
        "≥ 60 runs/s",
        met,
    )


def w11_rows(r: Results) -> list[Row]:
    per_task = value(r, "w11_fanout", "per_task_us")
    floor = value(r, "w11_fanout", "floor_per_task_us")
    return [
        row(
            "W11 parallel step of 100 no-op tasks, overhead per task; floor: `asyncio.gather`",
            per_task,
            floor,
            "µs",
            ("≤ 3x floor", over(per_task, floor), 3),
        )
    ]


def w12_rows(r: Results) -> list[Row]:
    untraced = value(r, "w12_tracing", "untraced_us")
    unset = value(r, "w12_tracing", "api_no_provider_us")
    per_span = value(r, "w12_tracing", "per_span_us")
    bare = value(r, "w12_tracing", "sdk_bare_span_us")
    return [
        row(
            "W12 W1 with OpenTelemetry's API imported, no provider; floor: never imported",
            unset,
            untraced,
            "µs",
            ("within noise (≤ 1.1x floor)", over(unset, untraced), 1.1),
        ),
        row(
            "W12 per span of a traced W1 run (SDK provider, spans dropped); floor: a bare span",
            per_span,
            bare,
            "µs",
            None,
        ),
    ]


def scaling_row(r: Results, backend: str, label: str, floor: float | None) -> Row:
    sizes = ("10", "1000", "10000", "100000")
    turns = [value(r, "w2_scaling", backend, "by_size", size, "turn_ms") for size in sizes]
    ratio = value(r, "w2_scaling", backend, "ratio_100k_to_1k")
    return Row(
        f"W2 per turn through `invoke` at 10 / 1k / 10k / 100k messages, {label}",
        " / ".join(number(turn) for turn in turns) + " ms",
        number(floor, "ms") if floor else "flat",
        f"{ratio:.2f}x (100k / 1k)" if ratio is not None else "—",
        "turn at 100k ≤ 1.5x turn at 1k",
        verdict(ratio, 1.5),
    )


def w2_rows(r: Results) -> list[Row]:
    floor = value(r, "floors", "w2_turn_ms")
    turn = value(r, "w2_graph", "turn_1000_ms")
    store = value(r, "w2_turns", "sqlite", "turn_1000_ms")
    postgres = [
        value(r, "w2_turns", name, "mean_ms")
        for name in ("postgres", "postgres+redis", "postgres_no_flush_wait")
    ]
    return [
        row(
            "W2 per turn through `invoke` on SQLite, turn 1,000",
            turn,
            floor,
            "ms",
            ("≤ 0.2 ms", turn, 0.2),
            best_peer(r, "w2_turn_ms"),
        ),
        scaling_row(r, "memory", "in memory", None),
        scaling_row(r, "sqlite", "SQLite", floor),
        row(
            "W2 SQLite file after 1,000 turns (2,000 messages), closed",
            value(r, "w2_graph", "files_mb"),
            None,
            "MB",
            ("≤ 3 MB", value(r, "w2_graph", "files_mb"), 3),
        ),
        row("W2 checkpointer alone (`asave`), SQLite, turn 1,000", store, floor, "ms", None),
        Row(
            "W2 checkpointer alone, mean: Postgres / + Redis / `synchronous_commit=off`",
            " / ".join(number(mean) for mean in postgres) + " ms",
            "—",
            "—",
            "—",
            "info",
        ),
    ]


def w3_rows(r: Results) -> list[Row]:
    merge = value(r, "w3_merge", "merge_us_at_100000")
    public = value(r, "w3_add_messages", "add_messages_us_at_100000")
    short = value(r, "w3_add_messages", "add_messages_us_at_1000")
    copy = value(r, "floors", "w3_copy_us")
    return [
        row(
            "W3 runtime merge of one message into 100,000",
            merge,
            None,
            "µs",
            ("≤ 20 µs", merge, 20),
        ),
        row(
            "W3 public `add_messages(left, [new])`, 100,000; floor `list(left)`",
            public,
            copy,
            "µs",
            ("≤ 3x floor", over(public, copy), 3),
            best_peer(r, "w3_add_messages_us_at_100000"),
        ),
        row(
            "W3 public `add_messages(left, [new])`, 1,000",
            short,
            None,
            "µs",
            ("≤ 57 µs (10xGraph 0.10.3)", short, 57),
            best_peer(r, "w3_add_messages_us_at_1000"),
        ),
    ]


def w4_rows(r: Results) -> list[Row]:
    """DESIGN.md's bound, then issue 38's: a trusted load well under the validating floor."""
    ours = value(r, "w4_resume", "load_and_turn_ms")
    floor = value(r, "floors", "w4", "validated_ms")
    unvalidated = value(r, "floors", "w4", "json_only_ms")
    base = row(
        "W4 fresh process: load 10,000 messages from SQLite + one turn",
        ours,
        floor,
        "ms",
        ("≤ 60 ms", ours, 60),
        best_peer(r, "w4_load_and_turn_ms"),
    )
    floor_text = base.floor
    if unvalidated is not None:
        floor_text += f" ({number(unvalidated, 'ms')} without validation)"
    against_floor = row(
        "W4 the same, against its floor (issue 38)",
        ours,
        floor,
        "ms",
        ("≤ 0.6x floor", over(ours, floor), 0.6),
    )
    return [dataclasses.replace(base, floor=floor_text), against_floor]


def w5_rows(r: Results) -> list[Row]:
    trim = value(r, "w5_trim", "trim_best_us")
    sync = value(r, "w5_trim", "sync_trim_context_best_us")
    window = value(r, "w5_long_turn", "window_40", "best_us")
    floor = value(r, "floors", "w5_us")
    return [
        row(
            "W5 `atrim_context` of 10,000 messages to the last 10 user turns",
            trim,
            floor,
            "µs",
            ("≤ 20 µs", trim, 20),
        ),
        row(
            "W5 sync `trim_context`; floor: the async call above",
            sync,
            trim,
            "µs",
            ("≤ 2x async", over(sync, trim), 2),
        ),
        row(
            "W5 window of 40 over one 10,000-message agentic turn (cut inside the turn)",
            window,
            trim,
            "µs",
            ("≤ 50 µs", window, 50),
        ),
        row(
            "W5 token budget of 4,000 over the same turn (counts the kept messages)",
            value(r, "w5_long_turn", "token_budget_4000", "best_us"),
            window,
            "µs",
            None,
        ),
    ]


def w6_rows(r: Results) -> list[Row]:
    held = value(r, "w6_invoke", "held_bytes_per_message")
    long_held = value(r, "w6_invoke", "long_held_bytes_per_message")
    stored = value(r, "w6_invoke", "stored_bytes_per_message")
    anchor = value(r, "w6_invoke", "anchor_stored_bytes_per_message") or 276
    return [
        row(
            "W6 bytes held per message through `invoke`, 100 threads x 1,000, in memory",
            held,
            value(r, "floors", "w6", "held_bytes_per_message"),
            "B",
            ("≤ 400 B", held, 400),
            None,
        ),
        row(
            "W6 bytes held per message, one thread of 10,000 built turn by turn through "
            "`invoke`, in memory (graph alive)",
            long_held,
            None,
            "B",
            ("≤ 1,100 B", long_held, 1100),
            best_peer(r, "w6_held_bytes_per_message"),
        ),
        row(
            "W6 SQLite bytes stored per message, same fill",
            stored,
            value(r, "floors", "w6", "stored_bytes_per_message"),
            "B",
            (f"≤ {anchor:.0f} B (openai-agents)", stored, anchor),
            best_peer(r, "w6_stored_bytes_per_message"),
        ),
    ]


def w7_rows(r: Results) -> list[Row]:
    stored = value(r, "w7_media", "stored_bytes")
    unique_plus_text = None
    if stored is not None:
        unique = value(r, "w7_media", "unique_media_bytes") or 0
        unique_plus_text = unique + (value(r, "w7_media", "text_bytes_estimate") or 0)
    mb = 1024 * 1024
    peak = value(r, "w7_media", "peak_rss_growth_bytes")
    return [
        row(
            "W7 stored MB, 1,000 turns, a 1 MB image every 10th (50 distinct), media store; "
            "floor: unique media + text",
            stored / mb if stored is not None else None,
            unique_plus_text / mb if unique_plus_text is not None else None,
            "MB",
            ("≤ 1.1x floor", over(stored, unique_plus_text), 1.1),
        ),
        row(
            "W7 the same fill inline (base64 in the rows); floor: with the media store",
            (value(r, "w7_media", "inline_baseline_bytes") or 0) / mb if stored else None,
            stored / mb if stored is not None else None,
            "MB",
            None,
        ),
        row(
            "W7 text turn, median of the last 100; floor: of the first 100",
            value(r, "w7_media", "text_turn_ms_last_100"),
            value(r, "w7_media", "text_turn_ms_first_100"),
            "ms",
            ("flat: ≤ 1.5x", value(r, "w7_media", "text_turn_last_over_first"), 1.5),
        ),
        row(
            "W7 peak RSS growth putting and streaming back a 20 MB file; floor: the file",
            peak / mb if peak is not None else None,
            (value(r, "w7_media", "file_bytes") or 0) / mb if peak is not None else None,
            "MB",
            ("< 2x the file", value(r, "w7_media", "peak_rss_growth_over_file"), 2),
        ),
        *(
            row(
                f"W7 peak RSS growth sending a stored 20 MB PDF {how} (OpenAI SDK); "
                "floor: the file",
                sent / mb
                if (sent := value(r, "w7_media", f"send_{mode}_peak_rss_growth_bytes")) is not None
                else None,
                (value(r, "w7_media", "file_bytes") or 0) / mb if sent is not None else None,
                "MB",
                ("< 2x the file", value(r, "w7_media", f"send_{mode}_peak_rss_growth_over_file"), 2)
                if mode == "default"
                else None,
            )
            for mode, how in (
                ("default", "with the default settings (send='auto': through the files API)"),
                ("inline", "with send='inline' (base64)"),
            )
        ),
    ]


def startup_rows(r: Results) -> list[Row]:
    bare = value(r, "startup", "python_pass_ms")
    graph = value(r, "startup", "import_graph_ms")
    cli = value(r, "startup", "cli_help_ms")
    return [
        row(
            "Startup: `import tenxgraph.core.graph`; floor `python -c pass`",
            graph,
            bare,
            "ms",
            ("≤ 150 ms", graph, 150),
        ),
        row("Startup: `tenxgraph --help`", cli, bare, "ms", ("≤ 150 ms", cli, 150)),
        row(
            "Startup: `from tenxgraph.core.graph import StateGraph` (loads the lazy modules)",
            value(r, "startup", "import_state_graph_ms"),
            bare,
            "ms",
            None,
        ),
    ]


def recall_row(r: Results, mode: str, label: str) -> Row:
    """Paraphrased recall@5, a floor to reach (>= 0.8), next to lexical search's."""
    ours = value(r, "w8_memory_recall", f"{mode}_minilm", "paraphrased")
    lexical = value(r, "w8_memory_recall", "lexical", "paraphrased")
    met = reached(ours, 0.8, show=True)
    return Row(label, number(ours), number(lexical), "—", "≥ 0.8", met)


def w8_rows(r: Results) -> list[Row]:
    search = "minilm_search"
    return [
        recall_row(
            r,
            "vector",
            "W8 recall@5 of 25 paraphrased queries, 1,000 facts, vector "
            "search, `MiniLMEmbedder`; floor: lexical search",
        ),
        recall_row(r, "hybrid", "W8 the same, hybrid search"),
        row(
            "W8 `MiniLMEmbedder` sentences/s: 1,000 facts in one call / one text per call",
            value(r, "w8_memory_recall", "minilm_throughput", "batch_per_s"),
            value(r, "w8_memory_recall", "minilm_throughput", "single_per_s"),
            "/s",
            None,
        ),
        row(
            "W8 vector search over 100,000 items of one user (SQLite, precomputed vectors, "
            "the query embedded in the search), p95; floor: p50",
            value(r, "w8_memory_recall", search, "p95_ms"),
            value(r, "w8_memory_recall", search, "p50_ms"),
            "ms",
            None,
        ),
    ]


def rows(results: Results) -> list[Row]:
    return [
        *w1_rows(results),
        *w2_rows(results),
        *w3_rows(results),
        *w4_rows(results),
        *w5_rows(results),
        *w6_rows(results),
        *w7_rows(results),
        *w8_rows(results),
        *w9_rows(results),
        w10_row(results),
        *w11_rows(results),
        *w12_rows(results),
        *startup_rows(results),
    ]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def commit() -> str:
    """The checked-out commit, and whether the tree had other changes (it often does here)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return f"{head} (with uncommitted changes)" if git("status", "--porcelain") else head


def machine() -> str:
    load = ", ".join(f"{figure:.1f}" for figure in os.getloadavg())
    return (
        f"Measured {datetime.date.today().isoformat()} on {cpu_model()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, commit {commit()}; "
        f"load average at the end (1, 5, 15 min): {load}."
    )


def footnotes(results: Results) -> list[str]:
    """Figures that explain a row without a column of their own, and failed workloads."""
    notes = []
    peaks = [
        value(results, "w2_scaling", backend, "by_size", "100000", "peak_rss_mb")
        for backend in ("memory", "sqlite")
    ]
    if None not in peaks:
        notes.append(
            "Peak resident memory of the 100k-message scaling process (interpreter, the seed "
            f"list and the thread): memory {number(peaks[0])} MB, SQLite {number(peaks[1])} MB."
        )
    store = value(results, "w6_invoke", "store_only_bytes_per_message")
    if store is not None:
        notes.append(f"W6 held with the compiled graph dropped (the store alone): {store:.0f} B.")
    in_process = value(results, "w9_server", "in_process_cpu_ms_per_run")
    if in_process is not None:
        w9 = results["w9_server"]
        notes.append(
            f"W9: the same run in process takes {number(in_process, 'ms')} of CPU; "
            f"{w9.get('concurrent_runs')} streams at once: first event p50 "
            f"{number(value(results, 'w9_server', 'first_event_ms_p50'), 'ms')}, end p50 "
            f"{number(value(results, 'w9_server', 'end_ms_p50'), 'ms')}, "
            f"{w9.get('errors')} errors, {w9.get('lost_event_runs')} runs with lost events."
        )
    for name, figures in results.items():
        if "error" in figures:
            notes.append(f"`{name}` failed: {figures['error']}")
    peers = results.get("peers", {})
    if not peers:
        notes.append(
            "Peer figures were not measured in this run (`make peers` creates their venv, "
            "`make bench` then runs them); a typed-in peer figure says so."
        )
    for name, peer in peers.items():
        notes += [f"peer `{name}` failed: {error}" for error in peer.get("errors", [])]
    return notes


def render(results: Results) -> str:
    lines = [
        BEGIN,
        "<!-- generated by `make bench` (bench/report.py); edits here are overwritten -->",
        "",
        machine(),
        "",
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += [
        "| " + " | ".join(getattr(line, field) for field, _ in COLUMNS) + " |"
        for line in rows(results)
    ]
    notes = footnotes(results)
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    return "\n".join([*lines, "", END])


def update_readme(path: Path, results: Results) -> None:
    """Replace the generated section of ``path`` (between the markers) by a new table."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{path} needs the markers {BEGIN} and {END}")
    path.write_text(text[:start] + render(results) + text[end + len(END) :], encoding="utf-8")


if __name__ == "__main__":
    import json
    import sys

    # ``python -m bench.report RESULTS.json``: the table of a saved run, printed, no file changed.
    print(render(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
