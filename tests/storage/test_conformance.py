"""The checkpointer and thread-lease contracts (``tenxgraph.testing``), run against every backend.

The backends are the parametrized ``make_checkpointer`` fixture of
``tests/storage/conftest.py``: memory, SQLite, Postgres and Postgres + Redis.
"""

from __future__ import annotations

import pytest

from tenxgraph.testing.checkpointers import CheckpointerContract, MakeCheckpointer
from tenxgraph.testing.thread_leases import ThreadLeasesContract


class TestCheckpointerContract(CheckpointerContract):
    @pytest.fixture
    def make_checkpointer(self, make_checkpointer: MakeCheckpointer) -> MakeCheckpointer:
        """Each backend of the conftest (the fixture is parametrized by ``backend``)."""
        return make_checkpointer


class TestThreadLeasesContract(ThreadLeasesContract):
    @pytest.fixture
    def make_checkpointer(self, make_checkpointer: MakeCheckpointer) -> MakeCheckpointer:
        """Each backend of the conftest: every one shipped is a ``ThreadLeases`` too."""
        return make_checkpointer
