"""Terminal output: colors only for a terminal, message and block rendering, a spinner.

Colors follow the usual convention: on when the stream is a TTY and the
``NO_COLOR`` environment variable is unset, off otherwise, so piped output
and logs stay plain text.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # a Console prints the CLI's first line before the data model loads
    from tenxgraph.core.state.message import Message, TokenUsages
    from tenxgraph.core.state.message_block import ContentBlock, MediaRef

__all__ = ["Console", "Spinner", "block_text", "colors_enabled", "usage_text"]

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
_ROLE_COLORS = {"user": "green", "assistant": "cyan", "system": "magenta", "tool": "yellow"}
_MAX_VALUE = 160
"""Longest rendering of a tool argument or output before it is shortened."""


def colors_enabled(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal and the user did not ask for ``NO_COLOR``."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ


class Console:
    """Writes the CLI's output to one stream, colored when that stream is a terminal."""

    def __init__(self, stream: TextIO | None = None, *, color: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.color = colors_enabled(self.stream) if color is None else color

    def paint(self, text: str, *styles: str) -> str:
        """``text`` wrapped in ANSI codes for ``styles`` when colors are on."""
        if not self.color or not styles:
            return text
        codes = ";".join(_CODES[style] for style in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def line(self, text: str = "", *styles: str) -> None:
        """Write one line."""
        self.stream.write(self.paint(text, *styles) + "\n")
        self.stream.flush()

    def write(self, text: str, *styles: str) -> None:
        """Write without a newline (streamed tokens)."""
        self.stream.write(self.paint(text, *styles))
        self.stream.flush()

    def heading(self, text: str) -> None:
        """A section title, set off by a blank line."""
        self.line()
        self.line(f"== {text} ==", "bold")

    def note(self, text: str) -> None:
        """A dim explanatory line."""
        self.line(text, "dim")

    def role(self, role: str) -> str:
        """The role name, padded and colored."""
        return self.paint(f"{role:<9}", _ROLE_COLORS.get(role, "bold"))

    def message(self, message: Message, *, prefix: str = "", usage: bool = True) -> None:
        """Render one message: its role, then each block on its own line."""
        lines = [block_text(block) for block in message.content] or ["(empty)"]
        if message.metadata.get("direct_tool_call"):
            lines[0] += self.paint("  (direct call_tool, not the model)", "dim")
        lead = f"{prefix}{self.role(message.role)} "
        pad = " " * (len(prefix) + 10)
        for index, text in enumerate(lines):
            parts = text.splitlines() or [""]
            for offset, part in enumerate(parts):
                first = index == 0 and offset == 0
                self.line(f"{lead if first else pad}{part}")
        if usage and message.usages is not None:
            self.line(f"{pad}{self.paint(usage_text(message.usages), 'dim')}")

    def messages(self, messages: Iterable[Message], *, prefix: str = "") -> None:
        """Render several messages in order."""
        for message in messages:
            self.message(message, prefix=prefix)

    def error(self, text: str) -> None:
        """One error line (the caller chooses the stream, normally stderr)."""
        self.line(f"tenxgraph: error: {text}", "red")


def usage_text(usages: TokenUsages) -> str:
    """``usage: P prompt + C completion = T tokens``."""
    return (
        f"usage: {usages.prompt_tokens} prompt + {usages.completion_tokens} completion "
        f"= {usages.total_tokens} tokens"
    )


def block_text(block: ContentBlock) -> str:
    """A one-glance rendering of a content block."""
    match block.type:
        case "text":
            return block.text
        case "tool_call" | "remote_tool_call":
            args = ", ".join(
                f"{key}={_short(value, quote=True)}" for key, value in block.args.items()
            )
            return f"-> call {block.name}({args})  [id {block.id}]"
        case "tool_result":
            flag = " (error)" if block.is_error else ""
            return f"<- result{flag}: {_short(block.output)}  [for {block.call_id}]"
        case "reasoning":
            return f"(reasoning) {block.summary}"
        case "error":
            code = f" {block.code}" if block.code else ""
            return f"[error{code}] {block.message}"
        case "annotation":
            refs = ", ".join(ref.title or ref.url or ref.file_id or "?" for ref in block.refs)
            return f"[{block.kind}: {refs}]"
        case "data":
            return f"[data {block.mime_type}]"
        case _:
            from tenxgraph.core.state.message_block import MediaRef  # loaded: a block exists

            media = getattr(block, "media", None)
            where = _media_text(media) if isinstance(media, MediaRef) else ""
            return f"[{block.type}{where}]"


def _media_text(media: MediaRef) -> str:
    where = media.url or media.file_id or f"{len(media.data_base64 or '')} base64 chars"
    mime = f" {media.mime_type}" if media.mime_type else ""
    return f"{mime} {where}"


def _short(value: Any, *, quote: bool = False) -> str:
    from pydantic import BaseModel  # loaded: only message blocks hold these values

    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, list) and value and all(isinstance(v, BaseModel) for v in value):
        text = " ".join(block_text(v) for v in value)  # a tool output made of blocks
    else:
        plain = isinstance(value, str) and not quote
        text = value if plain else json.dumps(value, default=str, ensure_ascii=False)
    text = text.replace("\n", " ")
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


class Spinner:
    """A spinner on stderr while slow work runs; silent when stderr is not a terminal."""

    def __init__(self, text: str, stream: TextIO | None = None) -> None:
        self.text = text
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.active = bool(isatty and isatty())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Spinner:
        if self.active:
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop and erase the spinner (safe to call twice)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._show("\r\x1b[K")

    def _spin(self) -> None:
        for frame in itertools.cycle("|/-\\"):
            if not self._show(f"\r{frame} {self.text}") or self._stop.wait(0.1):
                return

    def _show(self, text: str) -> bool:
        """Write and flush; False when the stream is gone (a closed pipe or file).

        The spinner is decoration: losing its stream is no reason to fail,
        and an error raised in its thread would only print a traceback. (A
        closed stdout or stderr is still noticed by ``PipeWatch``.)
        """
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            return False
        return True
