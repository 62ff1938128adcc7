"""The `tenxgraph` command."""
