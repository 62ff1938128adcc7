"""Peer frameworks measured by our own bench, in a venv apart from ours (``make peers``).

Each peer module has one small function per workload, written against the peer's public
API to mirror ours as closely as it allows (the module docstrings say where it cannot).
They run in the peers venv's Python as a child process (``python -m bench.peers W...``)
and never import tenxgraph, so neither install changes the other's figures.
``bench.peers.driver`` is our side: it starts that child next to each of our workloads,
so a peer's figure and ours come from the same run on the same machine load.
"""

PEERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "langgraph": (
        "bench.peers.langgraph_peer",
        ("w1_invoke", "w1_checkpointer", "w2_graph", "w3_add_messages", "w4_resume", "w6_invoke"),
    ),
    "openai-agents": ("bench.peers.openai_agents_peer", ("w6_invoke",)),
}
"""Each peer: its module here and our workloads it has a function for (named the same)."""
