"""The checkpointer contract (``tenxgraph.testing``), run against every backend.

The backends are the parametrized ``make_checkpointer`` fixture of
``tests/storage/conftest.py``: memory, SQLite, Postgres and Postgres + Redis.
"""

from __future__ import annotations

import pytest

from tenxgraph.testing.checkpointers import CheckpointerContract, MakeCheckpointer


class TestCheckpointerContract(CheckpointerContract):
    @pytest.fixture
    def make_checkpointer(self, make_checkpointer: MakeCheckpointer) -> MakeCheckpointer:
        """Each backend of the conftest (the fixture is parametrized by ``backend``)."""
        return make_checkpointer
