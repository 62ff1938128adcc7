"""``tenxgraph graph module:graph``: draw a user's graph as ASCII, Mermaid, SVG or PNG.

The format comes from ``--format``, else from the ``-o`` file's suffix, else
ASCII for the terminal. SVG and PNG are drawn by a local Graphviz ``dot``;
without it the command fails with a line saying how to install it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tenxgraph.cli.errors import CliError
from tenxgraph.cli.render import Console
from tenxgraph.cli.run import load_graph

__all__ = ["FORMATS", "draw_graph", "pick_format"]

FORMATS = ("ascii", "mermaid", "svg", "png")
_SUFFIXES = {".txt": "ascii", ".mmd": "mermaid", ".svg": "svg", ".png": "png"}


def pick_format(output_format: str | None, output: str | None) -> str:
    """The format asked for, or the one the output file's suffix names, or ``ascii``."""
    if output_format is not None:
        if output_format not in FORMATS:
            raise CliError(f"unknown format {output_format!r}: choose one of {', '.join(FORMATS)}")
        return output_format
    if output is None:
        return "ascii"
    suffix = Path(output).suffix.lower()
    if suffix not in _SUFFIXES:
        raise CliError(
            f"cannot tell the format from {output!r}: pass --format "
            f"({', '.join(FORMATS)}) or use a suffix {', '.join(_SUFFIXES)}"
        )
    return _SUFFIXES[suffix]


async def draw_graph(
    target: str,
    *,
    output_format: str | None,
    output: str | None,
    collapse_middleware: bool,
    console: Console,
) -> None:
    """Draw ``module:graph`` to ``output`` (a file) or to stdout."""
    chosen = pick_format(output_format, output)
    shape = load_graph(target).get_graph(collapse_middleware=collapse_middleware)
    if chosen == "png":
        data: bytes = await asyncio.to_thread(shape.draw_png)
    else:
        draw = {
            "ascii": shape.draw_ascii,
            "mermaid": shape.draw_mermaid,
            "svg": shape.draw_svg,
        }[chosen]
        data = (await asyncio.to_thread(draw)).encode("utf-8")
    if output is not None:
        await asyncio.to_thread(Path(output).write_bytes, data)
        console.note(f"wrote the {chosen} drawing of {target} to {output}")
        return
    if chosen == "png" and console.stream.isatty():
        raise CliError("a PNG is binary: write it to a file with -o graph.png")
    console.stream.flush()
    buffer = getattr(console.stream, "buffer", None)
    if buffer is None:  # a text-only stream (tests): PNG cannot go there
        if chosen == "png":
            raise CliError("a PNG is binary: write it to a file with -o graph.png")
        console.stream.write(data.decode("utf-8"))
    else:
        buffer.write(data)
        buffer.flush()
