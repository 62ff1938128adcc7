"""Terminal rendering: the color policy, the spinner, and how each block is shown."""

from __future__ import annotations

import io
import time

import pytest

from tenxgraph.cli.render import Console, Spinner, block_text
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import (
    AnnotationBlock,
    AnnotationRef,
    DataBlock,
    DocumentBlock,
    ErrorBlock,
    ImageBlock,
    MediaRef,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colors_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert Console(Terminal()).color
    assert not Console(io.StringIO()).color
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Console(Terminal()).color


def test_the_spinner_draws_on_a_terminal_and_erases_itself() -> None:
    terminal = Terminal()
    with Spinner("working", terminal):
        time.sleep(0.25)
    assert "| working" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r\x1b[K")
    piped = io.StringIO()
    with Spinner("working", piped):
        time.sleep(0.15)
    assert piped.getvalue() == ""


@pytest.mark.parametrize(
    ("block", "shown"),
    [
        (TextBlock(text="hi"), "hi"),
        (
            ToolCallBlock(id="c1", name="f", args={"x": "a", "n": 2}),
            '-> call f(x="a", n=2)  [id c1]',
        ),
        (ToolResultBlock(call_id="c1", output={"ok": True}), '<- result: {"ok": true}  [for c1]'),
        (ToolResultBlock(call_id="c1", output="boom", is_error=True), "<- result (error): boom"),
        (ReasoningBlock(summary="thought"), "(reasoning) thought"),
        (ErrorBlock(message="down", code="503"), "[error 503] down"),
        (AnnotationBlock(refs=[AnnotationRef(title="Paper")]), "[citation: Paper]"),
        (DataBlock(mime_type="application/json", data_base64="e30="), "[data application/json]"),
        (
            ImageBlock(media=MediaRef(kind="url", url="https://x/y.png", mime_type="image/png")),
            "[image image/png https://x/y.png]",
        ),
        (
            DocumentBlock(media=MediaRef(kind="data", data_base64="JVBERg==")),
            "[document 8 base64 chars]",
        ),
    ],
)
def test_block_text(block: object, shown: str) -> None:
    assert block_text(block).startswith(shown)  # type: ignore[arg-type]


def test_long_tool_outputs_are_shortened() -> None:
    text = block_text(ToolResultBlock(call_id="c", output="x" * 1000))
    assert text.endswith("...  [for c]")
    assert len(text) < 200


def test_a_message_lists_each_block_and_its_usage() -> None:
    out = io.StringIO()
    message = Message(
        role="assistant",
        content=[TextBlock(text="line one\nline two"), ToolCallBlock(id="c", name="f")],
    )
    Console(out, color=False).message(message, prefix="> ")
    assert out.getvalue().splitlines() == [
        "> assistant line one",
        "            line two",
        "            -> call f()  [id c]",
    ]
