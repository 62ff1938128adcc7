"""A closed output pipe (``tenxgraph ... | head``) ends the command quietly.

When the reader of stdout goes away, the next write raises
``BrokenPipeError`` wherever it happens: in the command itself, inside a
graph node (where the runtime reports it as a ``NodeError``), in a thread,
or in the last flush before the interpreter exits. ``PipeWatch`` wraps
``sys.stdout`` and ``sys.stderr`` so that every such failure is recorded,
whatever exception it turns into on its way up; ``main`` then exits with
status 141 and no message, as a process ended by SIGPIPE does (the CLI keeps
Python's default of ignoring SIGPIPE, so a dropped socket never kills it).
Once stdout's reader is gone, stderr is muted too: what code that caught
the error might still log about it (a warning, a thread's traceback) is
noise about a pipe that nobody reads.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import TracebackType
from typing import Any, TextIO, cast

__all__ = ["CLOSED_PIPE_STATUS", "PipeWatch"]

CLOSED_PIPE_STATUS = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away."""


class _Watched:
    """A text stream that records a broken pipe before letting the error go on."""

    def __init__(self, stream: TextIO, watch: PipeWatch, name: str) -> None:
        self._stream = stream
        self._watch = watch
        self._name = name

    def write(self, text: str) -> int:
        if self._name == "stderr" and "stdout" in self._watch.broken:
            return len(text)  # the command is ending quietly: no warnings about the pipe
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._watch.broken.add(self._name)
            raise

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._watch.broken.add(self._name)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class PipeWatch:
    """While active, ``sys.stdout`` and ``sys.stderr`` record the pipes that broke."""

    def __init__(self) -> None:
        self.broken: set[str] = set()
        """``"stdout"`` and/or ``"stderr"`` once a write to them failed for a closed pipe."""
        self._saved: tuple[TextIO, TextIO] | None = None

    def __enter__(self) -> PipeWatch:
        self._saved = (sys.stdout, sys.stderr)
        if sys.stdout is not None:  # None under pythonw
            sys.stdout = cast(TextIO, _Watched(sys.stdout, self, "stdout"))
        if sys.stderr is not None:
            sys.stderr = cast(TextIO, _Watched(sys.stderr, self, "stderr"))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
            self._saved = None

    def closed(self) -> bool:
        """True once a write to stdout or stderr failed because its reader went away."""
        return bool(self.broken)

    def finish(self) -> bool:
        """Flush what is still buffered; True when stdout's reader went away at any point.

        A stream whose pipe broke then writes to ``/dev/null``, so the
        interpreter's own flush at exit has nothing to complain about.
        """
        _flush()
        if self._saved is not None and self.broken:
            for name, stream in zip(("stdout", "stderr"), self._saved, strict=True):
                if name in self.broken and stream is not None:
                    _silence(stream)
            _flush()  # what the closed pipe refused now goes to /dev/null
        return "stdout" in self.broken


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError, AttributeError):  # closed, None
            stream.flush()


def _silence(stream: TextIO) -> None:
    """Point the stream's file descriptor at /dev/null (later writes and flushes succeed)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
