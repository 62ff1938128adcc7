"""Run every benchmark: ``python -m bench`` (or ``python -m bench w1_invoke w3_merge``)."""

from __future__ import annotations

import importlib
import json
import sys

WORKLOADS = ("w1_invoke", "w2_turns", "w2_graph", "w3_merge", "w4_resume", "w5_trim", "w6_memory")


def main(names: list[str]) -> None:
    for name in names or WORKLOADS:
        module = importlib.import_module(f"bench.{name}")
        print(f"{name}: {json.dumps(module.run())}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
