"""``python -m bench.peers PEER WORKLOAD``, in the peers venv: one peer's figures for one of
our workloads, printed as one JSON object (its version, the figures, a note per figure
where the peer's workload differs from ours)."""

from __future__ import annotations

import importlib
import json
import sys

from bench.peers import PEERS


def main(peer: str, workload: str) -> None:
    module_name, workloads = PEERS[peer]
    if workload not in workloads:
        raise SystemExit(f"{peer} has no counterpart of {workload}; it has {workloads}")
    module = importlib.import_module(module_name)
    figures = getattr(module, workload)()
    notes = {key: note for key, note in module.NOTES.items() if key in figures}
    print(json.dumps({"version": module.peer_version(), "figures": figures, "notes": notes}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
