"""The ``tenxgraph`` command (``tenxgraph.cli.main:main``), standard library only.

One module per job: ``main`` parses and dispatches, ``demo``, ``chat``,
``threads`` and ``run`` implement the subcommands, ``render`` prints
transcripts (colors only on a terminal), ``turns`` streams one run,
``locations`` opens a checkpointer from a path or DSN, ``models`` picks the
chat model, ``prompt`` reads a line or a confirmation from the terminal,
``pipes`` ends quietly when the reader of the output goes away, and
``errors`` holds the CLI's own error (a mistake in what the user typed).
"""

__all__: list[str] = []
