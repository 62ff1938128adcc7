"""The ``tenxgraph`` command (``tenxgraph.cli.main:main``), standard library only.

One module per job: ``main`` parses and dispatches, ``demo``, ``chat``,
``threads`` and ``run`` implement the subcommands, ``render`` prints
transcripts (colors only on a terminal), ``turns`` streams one run,
``locations`` opens a checkpointer from a path or DSN, ``models`` picks the
chat model.
"""

__all__: list[str] = []
