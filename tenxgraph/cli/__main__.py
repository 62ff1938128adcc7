"""``python -m tenxgraph.cli``: the same as the ``tenxgraph`` command."""

import sys

from tenxgraph.cli.main import main

sys.exit(main())
