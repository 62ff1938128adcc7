"""`make mutation`: mutmut over the modules that carry tenxgraph's invariants, one module at a time.

Mutation testing asks of each line: if it were wrong, would a test notice?
mutmut changes one thing at a time in a module (``<`` to ``<=``, ``and`` to
``or``, a string to another) and runs the tests that cover it; a mutant no
test fails *survives*. The modules below hold the promises of
docs/architecture.md (a call never separated from its result, context cuts,
the reducers, the row codec and its windows, the lease fence, the parallel
step's merge, the warm-thread cache), each with the tests that cover it, so a
run stays bounded.

Each module runs in its own directory, ``.mutation/<name>/`` (``tenxgraph``
and ``tests`` linked in, a ``pyproject.toml`` with the module's
``[tool.mutmut]`` table), so modules never share mutmut's state and a
module's run starts afresh. mutmut's own output goes to ``mutmut.log`` there;
``mutmut browse`` or ``mutmut show NAME`` in that directory shows a survivor.

The last lines are one per module, ``mutation score: NN.N% <module>
(killed/total)``, and a summary. A mutant counts as killed when a test
failed or timed out with it; ``total`` is every mutant mutmut made (lines
marked ``# pragma: no mutate`` make none). The exit status is 1 when a
module scores below ``--min`` (90 by default).

Usage: ``.venv/bin/python scripts/mutation.py [--children 2] [--min 90] [module ...]``,
a module named by its path or any part of it (``pairing``, ``_codec``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutation"

# The tiktoken tests check token counts against a tokenizer: nothing of the cut logic.
CONTEXT_TESTS = ["tests/core/state/context", "--ignore=tests/core/state/context/test_tiktoken.py"]
CODEC_TESTS = [
    "tests/storage/test_codec.py",
    "tests/storage/test_codec_invariants.py",
    "tests/storage/test_codec_fuzz.py",
    "tests/storage/test_compact_codec.py",
    "tests/storage/test_corrupt_rows.py",
    "tests/storage/test_damaged_rows.py",
    "tests/storage/test_conformance.py",
]

# Graph tests that run a child process (kills, workers, exporters): the mutant is not in it.
SUBPROCESS_GRAPH_TESTS = [
    "test_crash",
    "test_idempotency_kill",
    "test_parallel_kill",
    "test_multi_agent",
    "test_run_ids",
    "test_storage_spans",
    "test_tracing",
]

MODULES: dict[str, list[str]] = {
    "tenxgraph/core/state/pairing.py": [
        "tests/core/state/test_pairing.py",
        "tests/core/state/test_pairing_invariants.py",
        *CONTEXT_TESTS,
    ],
    "tenxgraph/core/state/context/fit.py": CONTEXT_TESTS,
    "tenxgraph/core/state/context/cuts.py": CONTEXT_TESTS,
    "tenxgraph/core/state/reducers.py": [
        "tests/core/state/test_reducers_invariants.py",
        "tests/core/state/test_agent_state.py",
        "tests/core/state/test_message_input.py",
    ],
    # The durable backends decode through the codec as the memory one does; Postgres is left
    # out to keep the run bounded (its own tests run in `make check`).
    "tenxgraph/storage/checkpointer/_codec.py": [*CODEC_TESTS, "-k", "not postgres"],
    "tenxgraph/storage/checkpointer/_sqlite_leases.py": [
        "tests/storage/test_leases.py",
        "tests/storage/test_conformance.py",
        "tests/storage/test_codec_invariants.py",
        "-k",
        "sqlite",
    ],
    # The save's compare-and-swap by remembered row id, and the lease a save takes: SQLite's
    # own tests, the conformance and lease suites run against it, and the runtime's warm turn.
    "tenxgraph/storage/checkpointer/_sqlite_save.py": [
        "tests/storage/test_sqlite_saves.py",
        "tests/storage/test_sqlite.py",
        "tests/storage/test_sqlite_inline.py",
        "tests/storage/test_sqlite_rows.py",
        "tests/storage/test_leases.py",
        "tests/storage/test_conformance.py",
        "tests/storage/test_identity.py",
        "tests/core/graph/test_lease_with_input.py",
        "-k",
        "sqlite or lease_with_input",
    ],
    # The reference backend: its compare-and-swap, lease fence, retention and reads.
    "tenxgraph/storage/checkpointer/memory.py": [
        "tests/storage/test_memory_store.py",
        "tests/storage/test_conformance.py",
        "tests/storage/test_leases.py",
        "tests/storage/test_threads.py",
        "tests/storage/test_identity.py",
        "tests/storage/test_timeline.py",
        "tests/storage/test_damaged_rows.py",
        "tests/storage/test_corrupt_rows.py",
        "tests/storage/test_ids.py",
        "tests/storage/media/test_offload.py",
        "-k",
        "memory or offload",
    ],
    # The state row: every stored value comes back as it was, or the save refuses it.
    "tenxgraph/storage/checkpointer/state_codec.py": [
        "tests/storage/test_compact_values.py",
        "tests/storage/test_codec.py",
        "tests/storage/test_codec_invariants.py",
        "tests/storage/test_compact_codec.py",
        "tests/storage/test_unstorable_text.py",
        "-k",
        "not postgres",
    ],
    # A warm thread's lease taken by its input's save: held by one run, or nothing written.
    "tenxgraph/core/graph/_lease_start.py": [
        "tests/core/graph/test_lease_with_input.py",
        "tests/core/graph/test_one_run_per_thread.py",
    ],
    # A run's lease: the heartbeat, the strategies' waits, the deferred take and the releases,
    # first on a virtual clock (tests/runs), then through whole graphs.
    "tenxgraph/runs/_leases.py": [
        "tests/runs/test_leases.py",
        "tests/core/graph/test_lease_with_input.py",
        "tests/core/graph/test_one_run_per_thread.py",
    ],
    # Warm threads: a kept copy is used only at its stored stamp; the cache stays within bounds.
    "tenxgraph/core/graph/_warm.py": [
        "tests/core/graph/test_warm_threads.py",
        "tests/core/graph/test_runtime.py",
        "tests/core/graph/test_loaded_sessions.py",
        "tests/core/graph/test_compile_isolation.py",
        "tests/core/graph/test_thread_identity.py",
    ],
    # A run's thread session: every save a compare-and-swap from the version it holds, the
    # window and seqs it writes, the state a warm run revives.
    "tenxgraph/core/graph/_session.py": [
        "tests/core/graph",
        *[f"--ignore=tests/core/graph/{name}.py" for name in SUBPROCESS_GRAPH_TESTS],
        # It reads a list's reference count, which mutmut's trampoline around the session raises.
        "--deselect",
        "tests/core/graph/test_warm_threads.py::test_a_dropped_result_lends_its_list_to_the_next_run",
        "tests/storage/media/test_offload.py",  # the stored form of offloaded media held
    ],
    # A thread's reads, creation, forks and metadata, and a run's first load.
    "tenxgraph/core/graph/_thread_ops.py": [
        "tests/core/graph",
        *[f"--ignore=tests/core/graph/{name}.py" for name in SUBPROCESS_GRAPH_TESTS],
    ],
    "tenxgraph/core/graph/_parallel.py": [
        "tests/core/graph/test_parallel.py",
        "tests/core/graph/test_parallel_invariants.py",
        "tests/core/graph/test_send.py",
    ],
}
"""Each module mutated, and the pytest arguments that select the tests covering it."""

SQL_LINE = (
    r"""^\s*(conn\.execute\()?['"]"?"""
    r"(SELECT|INSERT|UPDATE|DELETE|WHERE|RETURNING|AND|values|updated_at)\b"
)
"""A line that is (the start of) a string of SQL: its case mutants are not made."""

KILLED = {1, 3}  # a test failed (3: pytest's internal error, a crash the mutant caused)
TIMED_OUT = {24, -24, 36, 152, 255}  # the tests ran past mutmut's limit (an endless loop)
SURVIVED = {0}
NO_TESTS = {5, 33}


@dataclass
class Score:
    """One module's verdicts: mutants killed, mutants made, the survivors by name."""

    module: str
    killed: int
    total: int
    survivors: list[str]
    unchecked: int

    @property
    def percent(self) -> float:
        """Killed mutants as a percentage of all (100 for a module with none)."""
        return 100.0 * self.killed / self.total if self.total else 100.0

    def line(self) -> str:
        """The report line of the module."""
        return f"mutation score: {self.percent:.1f}% {self.module} ({self.killed}/{self.total})"


def mutmut_table(module: str, tests: list[str]) -> str:
    """The ``[tool.mutmut]`` table of one module's run."""
    table = {
        "source_paths": ["tenxgraph/"],
        "only_mutate": [module],
        "pytest_add_cli_args_test_selection": tests,
        # -x: a mutant is killed by its first failing test, and the property tests run last
        # (tests/_mutation_order.py); slow tests stay out of the loop; one Hypothesis seed,
        # so a mutant's verdict does not depend on the examples drawn.
        "pytest_add_cli_args": [
            *("-p", "no:cacheprovider", "-p", "tests._mutation_order", "-x", "-q"),
            *("-m", "not slow", "--hypothesis-seed=0"),
        ],
        # The default, forking mutmut's own process, hangs a child in tests that run SQLite
        # through a sync ``invoke`` (a thread pool forked mid-use); a fork server is clean.
        "process_isolation": "forkserver",
        # SQL keywords are case-insensitive: the lower- and upper-case mutants of a line of SQL
        # text are equivalent (and any other change to it fails every test that runs it).
        "do_not_mutate_patterns": [SQL_LINE],
    }
    lines = ["", "[tool.mutmut]"]
    lines += [f"{name} = {json.dumps(value)}" for name, value in table.items()]
    return "\n".join(lines) + "\n"


def workdir(module: str) -> Path:
    """Where ``module``'s run happens: ``.mutation/core.state.pairing`` for pairing.py."""
    return WORK / module.removeprefix("tenxgraph/").removesuffix(".py").replace("/", ".")


def prepare(module: str, tests: list[str]) -> Path:
    """A fresh directory for one module's run: the code and tests linked, the config written."""
    work = workdir(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in ("tenxgraph", "tests"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (work / "pyproject.toml").write_text(pyproject + mutmut_table(module, tests), encoding="utf-8")
    return work


def run_module(module: str, tests: list[str], children: int) -> Score:
    """Run mutmut over ``module`` in its own directory and read the verdicts it stored."""
    work = prepare(module, tests)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MUTANT_UNDER_TEST")}
    mutmut = Path(sys.executable).with_name("mutmut")
    with (work / "mutmut.log").open("w", encoding="utf-8") as log:
        subprocess.run(
            [str(mutmut), "run", "--max-children", str(children)],
            cwd=work,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    meta = work / "mutants" / f"{module}.meta"
    if not meta.exists():
        print(f"{module}: mutmut stored no results; see {work / 'mutmut.log'}", file=sys.stderr)
        return Score(module, 0, 0, [], 0)
    verdicts: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    killed = sum(1 for code in verdicts.values() if code in KILLED | TIMED_OUT)
    survivors = sorted(
        name
        for name, code in verdicts.items()
        if code is not None and code not in KILLED | TIMED_OUT
    )
    unchecked = sum(1 for code in verdicts.values() if code is None)
    return Score(module, killed, len(verdicts), survivors, unchecked)


def chosen(names: list[str]) -> list[str]:
    """The modules ``names`` pick (every module without names); an unknown name is an error."""
    if not names:
        return list(MODULES)
    picked = [module for module in MODULES if any(name in module for name in names)]
    unknown = [name for name in names if not any(name in module for module in MODULES)]
    if unknown:
        raise SystemExit(f"no module matches {unknown}; the modules are: {', '.join(MODULES)}")
    return picked


def main() -> int:
    """Run each chosen module in turn, then print the score lines; 1 if one is too low."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="modules to run (a path or part of one)")
    parser.add_argument("--children", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--min", type=float, default=90.0, help="lowest acceptable score (%%)")
    args = parser.parse_args()
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        raise SystemExit("mutmut is missing: install the dev extra (pip install -e '.[dev]')")
    scores = []
    for module in chosen(args.modules):  # one at a time: each run uses every child it is given
        print(f"mutating {module} ...", flush=True)
        score = run_module(module, MODULES[module], args.children)
        for name in score.survivors:
            print(f"  survived: {name}")
        if score.unchecked:
            log = workdir(module) / "mutmut.log"
            print(f"  {score.unchecked} mutants not checked: the run stopped (see {log})")
        scores.append(score)
    for score in scores:
        print(score.line())
    killed, total = sum(s.killed for s in scores), sum(s.total for s in scores)
    low = [s.module for s in scores if s.percent < args.min]
    percent = 100.0 * killed / total if total else 100.0
    print(
        f"mutation score: {percent:.1f}% overall ({killed}/{total}, {len(scores)} modules, "
        f"{len(low)} below {args.min:g}%)"
    )
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
