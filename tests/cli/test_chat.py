"""``tenxgraph chat`` through a pseudo-terminal, as a user types it."""

from __future__ import annotations

import io
import os
import re
import shlex
import sys
from pathlib import Path

import pexpect
import pytest

from tenxgraph.cli.chat import ChatOptions, chat
from tenxgraph.cli.render import Console
from tests.cli.conftest import REPO

ESCAPE = "\x1b["


def spawn(*args: str, color: bool = True, timeout: float = 30) -> pexpect.spawn:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    if not color:
        env["NO_COLOR"] = "1"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tenxgraph.cli", "chat", *args],
        env=env,
        encoding="utf-8",
        timeout=timeout,
        dimensions=(50, 200),
    )
    child.expect_exact("you> ")
    return child


def say(child: pexpect.spawn, text: str) -> str:
    """Send a line; return everything printed until the next prompt."""
    child.sendline(text)
    child.expect_exact("you> ")
    return str(child.before)


def quit_chat(child: pexpect.spawn) -> None:
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_chat_streams_answers_and_slash_commands_inspect_the_thread(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.sqlite")
    child = spawn("--model", "test-echo", "--db", db, "--thread", "t1")
    assert "new thread t1" in str(child.before)
    assert ESCAPE in str(child.before)  # a terminal gets colors
    assert "echo: hello there" in say(child, "hello there")
    history = say(child, "/history")
    assert "0 * user      hello there" in _plain(history)
    assert "1 * assistant echo: hello there" in _plain(history)
    state = _plain(say(child, "/state"))
    assert "thread t1, 2 messages in the log" in state
    assert "status completed, last node chat" in state
    assert "summary: (none)" in _plain(say(child, "/summary"))
    assert "t1 " in _plain(say(child, "/threads"))
    assert "unknown command /bogus" in _plain(say(child, "/bogus"))
    assert "/history" in say(child, "/help")
    assert "new thread chat-" in _plain(say(child, "/new"))
    assert "echo: on a new thread" in say(child, "on a new thread")
    quit_chat(child)

    again = spawn("--model", "test-echo", "--db", db, "--thread", "t1", color=False)
    assert "resuming thread t1: 2 messages in the log" in str(again.before)
    assert ESCAPE not in str(again.before)  # NO_COLOR is respected
    assert "echo: and again" in say(again, "and again")
    assert "2 * user      and again" in say(again, "/history")
    again.sendeof()
    again.expect(pexpect.EOF)
    again.close()
    assert again.exitstatus == 0


def test_chat_with_summary_context_keeps_a_summary(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.sqlite")
    child = spawn(
        "--model", "test-echo", "--db", db, "--thread", "s", "--context", "summary",
        "--max-messages", "3", color=False,
    )  # fmt: skip
    for text in ("first fact: the sky is green", "second", "third"):
        say(child, text)
    summary = say(child, "/summary")
    assert "summary:" in summary
    assert "the sky is green" in summary  # the echo summarizer repeats the transcript
    history = say(child, "/history")
    assert "0 . user      first fact" in history  # summarized away, still in the log
    quit_chat(child)


def test_chat_bad_option_is_one_error_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tenxgraph.cli", "chat", "--max-messages", "0", "--db", str(tmp_path / "x")],
        env=env,
        encoding="utf-8",
        timeout=30,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "--max-messages must be at least 1, got 0" in str(child.before)
    assert "Traceback" not in str(child.before)


async def test_tokens_are_written_as_they_stream(tmp_path: Path) -> None:
    writes: list[str] = []

    class Recording(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return super().write(text)

    lines = iter(["one two three four", "/quit"])

    async def read(prompt: str) -> str:
        return next(lines)

    options = ChatOptions(model="test-echo", db=str(tmp_path / "c.sqlite"), thread="w")
    await chat(options, Console(Recording()), read)
    # the answer arrived word by word: one write per streamed delta
    assert [w for w in writes if w.strip() in ("echo:", "one", "two", "three", "four")] == [
        "echo: ",
        "one ",
        "two ",
        "three ",
        "four",
    ]


def test_ctrl_c_at_the_prompt_leaves_at_once(tmp_path: Path) -> None:
    child = spawn("--model", "test-echo", "--db", str(tmp_path / "c.sqlite"), color=False)
    child.sendintr()
    child.expect(pexpect.EOF, timeout=30)  # no hanging on the input thread (30 s: a loaded CI)
    child.close()
    assert child.exitstatus == 0
    assert re.search(r"thread chat-[0-9a-f]{8} has no messages; nothing was saved", child.before)


def _leave(child: pexpect.spawn, how: str) -> None:
    if how == "ctrl-c":
        child.sendintr()
    elif how == "ctrl-d":
        child.sendeof()
    else:
        child.sendline(how)


@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-d", "/exit", "/quit"])
def test_leaving_tells_how_to_resume_the_thread(tmp_path: Path, how: str) -> None:
    db = str(tmp_path / "my chats.sqlite")  # a space: the command must quote it
    child = spawn("--model", "test-echo", "--db", db, "--user", "ann", color=False)
    thread = re.search(r"new thread (chat-[0-9a-f]{8})", str(child.before))
    assert thread is not None
    say(child, "remember the number 42")
    _leave(child, how)
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0
    farewell = str(child.before).replace("\r\n", "\n")
    command = f"tenxgraph chat --thread {thread[1]} --db '{db}' --user ann --model test-echo"
    assert f"thread {thread[1]}: 2 messages in {db}. Resume it with:\n  {command}\n" in farewell
    assert farewell.count(thread[1]) == 2  # said once, in the farewell (not repeated after)

    # the printed command does resume the thread
    args = shlex.split(command)
    again = spawn(*args[2:], color=False)
    assert f"resuming thread {thread[1]}: 2 messages in the log" in str(again.before)
    assert "remember the number 42" in say(again, "/history")
    quit_chat(again)


@pytest.mark.local_model
def test_chat_on_the_real_local_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")
    db = str(tmp_path / "chat.sqlite")
    child = spawn("--db", db, "--thread", "real", "--max-tokens", "300", color=False, timeout=90)
    assert "SmolLM2" in str(child.before)
    answer = say(child, "What is the capital of France?")
    assert "assistant" in answer
    assert "completion" in answer  # the usage line of a real answer
    assert "1 * assistant" in say(child, "/history")
    # Ctrl-C while an answer streams interrupts that answer, not the chat
    child.sendline("Write a very long story about a dragon, with many chapters.")
    child.expect_exact("assistant")
    child.expect(r"\w+ \w+")  # some tokens arrived
    child.sendintr()
    child.expect_exact("you> ")
    assert "(interrupted: the turn was not kept" in str(child.before)
    history = say(child, "/history")
    assert re.search(r"^\s*1 \* assistant", history, re.MULTILINE)
    assert not re.search(r"^\s*2 ", history, re.MULTILINE)  # the interrupted turn left nothing
    quit_chat(child)


def _plain(text: str) -> str:
    """Text without ANSI color codes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


async def test_a_failed_turn_is_reported_and_the_chat_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tenxgraph.cli import chat as chat_module
    from tenxgraph.core.llm import ScriptedModel
    from tenxgraph.errors import ServerError

    model = ScriptedModel([ServerError("upstream is down", status=503), "back again"])
    monkeypatch.setattr(chat_module, "chat_model", lambda *args, **kwargs: model)
    lines = iter(["first", "second", "/quit"])

    async def read(prompt: str) -> str:
        return next(lines)

    out = io.StringIO()
    options = ChatOptions(db=str(tmp_path / "c.sqlite"), thread="f", context="none")
    await chat(options, Console(out), read)
    assert "tenxgraph: error: upstream is down" in capsys.readouterr().err
    assert "assistant back again" in out.getvalue()
    model.assert_consumed()


async def test_chat_with_a_named_model_on_an_openai_compatible_server(tmp_path: Path) -> None:
    from tenxgraph.testing.replay import ReplayServer

    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "served-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    lines = iter(["hi there", "/quit"])

    async def read(prompt: str) -> str:
        return next(lines)

    out = io.StringIO()
    with ReplayServer() as server:
        server.stream(
            [
                chunk({"role": "assistant", "content": "Hello"}),
                chunk({"content": " from the server"}),
                chunk({}, finish="stop"),
                "[DONE]",
            ]
        )
        options = ChatOptions(
            model="served-model",
            base_url=server.url + "/v1",
            db=str(tmp_path / "c.sqlite"),
            thread="remote",
            system="Be brief.",
        )
        await chat(options, Console(out), read)
    assert "assistant Hello from the server" in out.getvalue()
    assert "model served-model (openai-compatible)" in out.getvalue()
    (request,) = server.requests
    assert request.body["model"] == "served-model"
    assert request.body["stream"] is True
    sent = [(m["role"], m["content"]) for m in request.body["messages"]]
    assert sent == [("system", "Be brief."), ("user", "hi there")]


async def test_a_graph_that_asks_for_approval_is_answered_at_the_prompt(tmp_path: Path) -> None:
    lines = iter(
        [
            "delete notes.txt",
            "x",  # not a choice: asked again
            "e",
            "[1]",  # not an object: asked again
            '{"path": "scratch.txt"}',
            "delete thesis.tex",
            "r",
            "I still need it",
            "delete old.log",
            "a",
            "/quit",
        ]
    )
    prompts: list[str] = []

    async def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(lines)

    out = io.StringIO()
    db = str(tmp_path / "c.sqlite")
    options = ChatOptions(db=db, thread="approve", graph="tests.server.approval_graph:graph")
    await chat(options, Console(out), read)
    shown = out.getvalue()
    assert 'tool call delete_file({"path": "notes.txt"})' in shown
    assert "Delete this file?" in shown
    assert "delete_file said: deleted scratch.txt" in shown
    assert "tool 'delete_file' was not run: I still need it" in shown
    assert "delete_file said: deleted old.log" in shown
    assert prompts.count("a=approve, e=edit, r=reject> ") == 4
    assert "--graph tests.server.approval_graph:graph" in shown  # how to resume


def test_chat_with_a_graph_in_a_terminal(tmp_path: Path) -> None:
    db = str(tmp_path / "chat.sqlite")
    child = spawn("--graph", "tests.server.approval_graph:graph", "--db", db, color=False)
    child.sendline("delete notes.txt")
    child.expect_exact("a=approve, e=edit, r=reject> ")
    child.sendline("a")
    child.expect_exact("you> ")
    assert "delete_file said: deleted notes.txt" in str(child.before)
    quit_chat(child)


async def test_a_thread_left_paused_is_asked_first_when_resumed(tmp_path: Path) -> None:
    db = str(tmp_path / "c.sqlite")
    options = ChatOptions(db=db, thread="left", graph="tests.server.approval_graph:graph")
    first = iter(["delete notes.txt"])

    async def leave(prompt: str) -> str:
        try:
            return next(first)
        except StopIteration:
            raise EOFError from None

    out = io.StringIO()
    await chat(options, Console(out), leave)
    assert "the thread waits for that answer" in out.getvalue()

    later = iter(["a", "/quit"])

    async def answer(prompt: str) -> str:
        return next(later)

    out = io.StringIO()
    await chat(options, Console(out), answer)
    assert "the thread waits for an answer:" in out.getvalue()
    assert "delete_file said: deleted notes.txt" in out.getvalue()
