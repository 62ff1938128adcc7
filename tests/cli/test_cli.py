"""``tenxgraph threads``, ``run`` and error reporting, on real SQLite and Postgres threads."""

from __future__ import annotations

import asyncio
import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

import tenxgraph
from tenxgraph.cli.main import main
from tenxgraph.cli.render import Spinner
from tenxgraph.core.state import MessagesAdapter, ThreadKey
from tenxgraph.storage.checkpointer import SqliteCheckpointer
from tests.cli.conftest import REPO, SUMMARY, run_cli

LOG_LINE = re.compile(r"^\s*(\d+) ([*.]) (user|assistant|tool|system)\b")


def stored(path: Path, thread: str = "trip"):  # type: ignore[no-untyped-def]
    async def load():  # type: ignore[no-untyped-def]
        checkpointer = SqliteCheckpointer(path)
        try:
            return (
                await checkpointer.aload(ThreadKey(thread)),
                await checkpointer.alist_messages(ThreadKey(thread)),
            )
        finally:
            await checkpointer.aclose()

    return asyncio.run(load())


@pytest.mark.parametrize("form", ["option", "positional"])
def test_threads_list(trip_db: Path, capsys: pytest.CaptureFixture[str], form: str) -> None:
    where = ["--db", str(trip_db)] if form == "option" else [str(trip_db)]
    assert main(["threads", "list", *where]) == 0
    out = capsys.readouterr().out
    thread, _log = stored(trip_db)
    (row,) = [line for line in out.splitlines() if line.startswith("trip ")]
    assert row.split()[1:3] == [str(thread.log_length), str(thread.version)]
    assert "\x1b[" not in out  # not a terminal: no colors


def test_threads_show_marks_the_window_and_shows_summary_tools_usage(
    trip_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["threads", "show", "trip", "--db", str(trip_db)]) == 0
    out = capsys.readouterr().out
    thread, log = stored(trip_db)
    marks = {int(m[1]): m[2] for m in map(LOG_LINE.match, out.splitlines()) if m}
    assert sorted(marks) == [item.seq for item in log]
    in_window = {seq for start, end in thread.window for seq in range(start, end)}
    assert {seq for seq, mark in marks.items() if mark == "*"} == in_window
    assert 0 < len(in_window) < len(log)  # the summary moved the window
    assert SUMMARY in out
    assert 'state: selected_city="Lisbon"' in out
    assert '-> call select_city(city="Lisbon")  [id c1]' in out
    assert "<- result: City set to Lisbon.  [for c1]" in out
    assert "usage: " in out
    assert f"{thread.log_length} messages in the log, {len(in_window)} in the context window" in out


def test_threads_export_writes_the_log_window_and_values(trip_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "trip.json"
    assert main(["threads", "export", "trip", "--db", str(trip_db), "-o", str(target)]) == 0
    data = json.loads(target.read_text())
    thread, log = stored(trip_db)
    messages = MessagesAdapter.validate_python(data["messages"])
    assert [m.message_id for m in messages] == [item.message.message_id for item in log]
    assert data["seqs"] == [item.seq for item in log]
    assert data["window"] == [list(pair) for pair in thread.window]
    assert data["values"]["selected_city"] == "Lisbon"
    assert data["values"]["context_summary"] == thread.values["context_summary"]
    assert data["values"]["context_summary"].startswith(SUMMARY)  # rolling: later ones append


def test_threads_export_to_stdout_is_json(
    trip_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["threads", "export", "trip", str(trip_db)]) == 0  # location as an argument
    assert json.loads(capsys.readouterr().out)["thread_id"] == "trip"


@pytest.mark.parametrize("flag", ["--yes", "-y"])
def test_threads_delete_with_yes(
    trip_db: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    assert main(["threads", "delete", "trip", "--db", str(trip_db), flag]) == 0
    assert "deleted thread trip" in capsys.readouterr().out
    assert stored(trip_db)[0] is None
    assert main(["threads", "delete", "trip", "--db", str(trip_db), flag]) == 1
    assert "no thread 'trip'" in capsys.readouterr().err


def test_threads_delete_without_a_terminal_needs_yes(trip_db: Path) -> None:
    result = run_cli("threads", "delete", "trip", "--db", str(trip_db))  # stdin: /dev/null
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "tenxgraph: error: not deleting thread 'trip' without confirmation "
        "(stdin is not a terminal): pass --yes"
    ]
    assert stored(trip_db)[0] is not None


def spawn_cli(*args: str) -> pexpect.spawn:
    """The command on a pseudo-terminal (stdin and stdout are a terminal)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    return pexpect.spawn(
        sys.executable, ["-m", "tenxgraph.cli", *args], env=env, encoding="utf-8", timeout=30
    )


@pytest.mark.parametrize(
    ("answer", "deleted"), [("y", True), ("yes", True), ("n", False), ("", False)]
)
def test_threads_delete_asks_on_a_terminal(trip_db: Path, answer: str, deleted: bool) -> None:
    thread, _log = stored(trip_db)
    child = spawn_cli("threads", "delete", "trip", str(trip_db))
    child.expect_exact("[y/N] ")
    shown = str(child.before)
    assert f"thread trip (user default): {thread.log_length} messages in the log" in shown
    assert "delete thread trip and its history?" in shown
    child.sendline(answer)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert ("deleted thread trip" if deleted else "kept thread trip") in str(child.before)
    assert (stored(trip_db)[0] is None) is deleted


def test_ctrl_c_at_the_delete_question_keeps_the_thread(trip_db: Path) -> None:
    child = spawn_cli("threads", "delete", "trip", str(trip_db))
    child.expect_exact("[y/N] ")
    child.sendintr()
    child.expect(pexpect.EOF, timeout=10)
    child.close()
    assert child.exitstatus == 130
    assert stored(trip_db)[0] is not None


def test_threads_are_scoped_by_user(trip_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["threads", "list", "--db", str(trip_db), "--user", "someone-else"]) == 0
    assert "no threads for user 'someone-else'" in capsys.readouterr().out
    assert main(["threads", "show", "trip", "--db", str(trip_db), "--user", "someone-else"]) == 1


def test_an_error_is_one_line_without_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    result = run_cli("threads", "show", "x", "--db", str(missing))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"tenxgraph: error: no database at {missing} (pass --db PATH or a postgresql:// DSN)"
    ]
    assert not missing.exists()  # reading never creates a database


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(tmp_path: Path, where: str) -> None:
    args = ["threads", "show", "x", "--db", str(tmp_path / "missing.sqlite")]
    result = run_cli(*(["--debug", *args] if where == "before" else [*args, "--debug"]))
    assert result.returncode != 0
    assert "Traceback (most recent call last)" in result.stderr
    assert "CliError: no database" in result.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = run_cli("threads", "explode")
    assert result.returncode == 2
    assert "invalid choice: 'explode'" in result.stderr


GRAPH_MODULE = """
from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message


def reply(state: AgentState) -> list[Message]:
    users = [m for m in state.context if m.role == "user"]
    return [Message.text_message(f"heard {len(users)}: {users[-1].text()}", role="assistant")]


graph = StateGraph(AgentState)
graph.add_node("reply", reply)
graph.set_entry_point("reply")
compiled = graph.compile()
not_a_graph = 42
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"usergraph_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(GRAPH_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # `run` puts the cwd on sys.path
    yield name
    sys.modules.pop(name, None)


def test_run_a_compiled_graph(user_module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{user_module}:compiled", "--input", "hello"]) == 0
    assert "assistant heard 1: hello" in capsys.readouterr().out


def test_run_a_state_graph_on_a_saved_thread(
    user_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "run.sqlite")
    for text in ("one", "two"):
        assert (
            main(["run", f"{user_module}:graph", "--input", text, "--thread", "t", "--db", db]) == 0
        )
    out = capsys.readouterr().out
    assert "heard 1: one" in out
    assert "heard 2: two" in out  # the second run saw the first, loaded from the file
    _thread, log = stored(Path(db), "t")
    assert [item.message.text() for item in log] == ["one", "heard 1: one", "two", "heard 2: two"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("no_colon", "expected module:graph"),
        ("{m}:missing", "has no attribute 'missing'"),
        ("{m}:not_a_graph", "is not a StateGraph or a CompiledGraph (it is int)"),
        ("no_such_module_xyz:graph", "cannot import module 'no_such_module_xyz'"),
    ],
)
def test_run_reports_bad_targets(
    user_module: str, target: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", target.format(m=user_module), "--input", "x"]) == 1
    err = capsys.readouterr().err
    assert expected in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.postgres
def test_threads_against_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    from tenxgraph.core.graph import StateGraph
    from tenxgraph.core.state import AgentState, Message
    from tenxgraph.storage.checkpointer import PgCheckpointer

    dsn = "postgresql://postgres@127.0.0.1:5432/test"
    user = f"cli-{uuid.uuid4().hex[:8]}"

    def reply(state: AgentState) -> list[Message]:
        return [Message.text_message("pong", role="assistant")]

    async def make() -> None:
        checkpointer = PgCheckpointer(dsn)
        graph = StateGraph(AgentState)
        graph.add_node("reply", reply)
        graph.set_entry_point("reply")
        app = graph.compile(checkpointer)
        await app.ainvoke(
            {"messages": [Message.text_message("ping")]}, {"thread_id": "pg", "user_id": user}
        )
        await checkpointer.aclose()

    asyncio.run(make())
    assert main(["threads", "show", "pg", "--db", dsn, "--user", user]) == 0
    out = capsys.readouterr().out
    assert "0 * user      ping" in out
    assert "1 * assistant pong" in out
    assert main(["threads", "delete", "pg", "--db", dsn, "--user", user, "--yes"]) == 0
    assert main(["threads", "list", "--db", dsn, "--user", user]) == 0
    assert f"no threads for user '{user}'" in capsys.readouterr().out


def test_demo_without_llama_cpp_says_how_to_install_it(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['llama_cpp'] = None\n"  # as if the extra were not installed
        "from tenxgraph.cli.main import main\n"
        f"sys.exit(main(['demo', '--db', {str(tmp_path / 'd.sqlite')!r}]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "tenxgraph: error: 'llama-cpp-python' is not installed; it comes with the extra "
        'tenxgraph[local]. In a tenxgraph checkout run: CMAKE_ARGS="-DGGML_NATIVE=OFF" '
        'pip install --no-cache-dir -e ".[local]"'
    )


def test_version_is_the_installed_packages() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout == f"tenxgraph {importlib.metadata.version('tenxgraph')}\n"
    assert importlib.metadata.version("tenxgraph") == tenxgraph.__version__


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--model", "lcoal"], "unknown model 'lcoal': --model takes gpt-*"),
        (["--model", "claud-3"], "for another model pass --provider (openai, "),
        (["--model", "gpt-4o", "--provider", "azure"], "unknown --provider 'azure'; choose one of"),
        (["--model", "llama3", "--provider", "openai-compatible"], "needs --base-url"),
    ],
)
def test_chat_model_errors_name_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    db = tmp_path / "chat.sqlite"
    assert main(["chat", *args, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert expected in err
    assert "provider=" not in err
    assert "base_url" not in err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists()  # rejected before anything was opened


# --- a closed output pipe ends every command quietly ----------------------------------

PRINTING_MODULE = """
import logging

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, Message

LINES = 20_000


def chatty(state: AgentState) -> list[Message]:
    print("the node itself writes to stdout", flush=True)
    return [Message.text_message("ok", role="assistant")]


def forgiving(state: AgentState) -> list[Message]:
    try:
        print("the node writes and carries on when that fails", flush=True)
    except OSError as exc:
        logging.getLogger("user").warning("could not print: %s", exc)
    return [Message.text_message("ok", role="assistant")]


def long(state: AgentState) -> list[Message]:
    text = "\\n".join(f"line {i} of a long answer" for i in range(LINES))
    return [Message.text_message(text, role="assistant")]


def graph_of(node):
    graph = StateGraph(AgentState)
    graph.add_node("node", node)
    graph.set_entry_point("node")
    return graph


printing = graph_of(chatty)
forgiving = graph_of(forgiving)
verbose = graph_of(long)
"""


@pytest.fixture
def printing_module(tmp_path: Path) -> str:
    name = f"printing_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(PRINTING_MODULE)
    return name


def run_into_closed_pipe(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command with stdout a pipe whose reader has gone before anything is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "tenxgraph.cli", *args],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "command",
    [
        ["threads", "show", "trip", "{db}"],
        ["threads", "export", "trip", "{db}"],
        ["threads", "list", "{db}"],
        ["run", "{module}:printing", "--input", "hi"],  # the write fails inside a graph node
        ["run", "{module}:forgiving", "--input", "hi"],  # ... which logs the error and goes on
        ["chat", "--model", "test-echo", "--db", "{tmp}/chat.sqlite"],
        ["--version"],  # the write fails in the last flush, after argparse exits
        ["--help"],
        ["threads", "--help"],
    ],
    ids=lambda command: " ".join(command),
)
def test_a_closed_pipe_ends_any_command_quietly(
    trip_db: Path, printing_module: str, tmp_path: Path, command: list[str]
) -> None:
    args = [part.format(db=trip_db, module=printing_module, tmp=tmp_path) for part in command]
    result = run_into_closed_pipe(*args, cwd=tmp_path)
    assert result.stderr == ""
    assert result.returncode == 141


def test_head_closing_the_pipe_midway(printing_module: str, tmp_path: Path) -> None:
    # `tenxgraph run ... | head -n 1`: the output (about 600 kB) is far larger than
    # the pipe's buffer, so head exits while the command is still writing
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tenxgraph.cli",
            "run",
            f"{printing_module}:verbose",
            "--input",
            "x",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    assert command.stdout is not None
    assert command.stderr is not None
    head = subprocess.run(
        ["head", "-n", "1"], stdin=command.stdout, capture_output=True, timeout=60, check=False
    )
    command.stdout.close()  # only head reads the pipe
    assert command.wait(timeout=60) == 141
    assert command.stderr.read() == b""
    command.stderr.close()
    assert head.stdout == b"assistant line 0 of a long answer\n"


def test_a_spinner_whose_stream_is_gone_stops_quietly() -> None:
    # an exception escaping the spinner's thread would fail this test (warnings are errors)
    class ClosedTerminal(io.StringIO):
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    spinner = Spinner("thinking...", ClosedTerminal())
    with spinner:
        assert spinner.active
        assert spinner._thread is not None
        spinner._thread.join(timeout=5)  # it ended on its own at the first failed write
        assert not spinner._thread.is_alive()


def test_nothing_under_one_user_names_the_users_that_hold_threads(
    trip_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``trip`` is saved for the default user: another ``--user`` is told where to look."""
    assert main(["threads", "list", "--db", str(trip_db), "--user", "ada"]) == 0
    out = capsys.readouterr().out
    assert "no threads for user 'ada'; threads are saved per user: 'default' (1) hold some" in out
    assert main(["threads", "show", "trip", "--db", str(trip_db), "--user", "ada"]) == 1
    err = capsys.readouterr().err
    assert "no thread 'trip' for user 'ada'; user 'default' has it: add --user default" in err
    assert main(["threads", "show", "nope", "--db", str(trip_db), "--user", "ada"]) == 1
    assert capsys.readouterr().err.strip().endswith("no thread 'nope' for user 'ada'")
