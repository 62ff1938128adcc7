"""Run ids: 32 hex digits like ``uuid4().hex``, never repeated, not even by a forked child."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tenxgraph.core.graph._run_control import new_run_id


def test_run_ids_are_hex_and_unique() -> None:
    ids = [new_run_id() for _ in range(10_000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", run_id) for run_id in ids)
    assert len(set(ids)) == len(ids)


CHILD = r"""
import os
from tenxgraph.core.graph._run_control import new_run_id
os.write(1, f"{new_run_id()}\n".encode())
pid = os.fork()
os.write(1, f"{new_run_id()}\n".encode())  # one write each: lines never interleave
if pid:
    os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_draws_its_own_ids() -> None:
    # a fresh interpreter: forking this multi-threaded test process would be unsafe
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    ids = done.stdout.split()
    assert len(ids) == 3 and len(set(ids)) == 3
    assert len({run_id[:16] for run_id in ids}) == 2  # the child drew a prefix of its own
