"""The memory store contract (``tenxgraph.testing``), run against every backend.

The backends are the parametrized ``make_memory_store`` fixture of this
directory's ``conftest.py``: in-memory, SQLite and Postgres.
"""

from __future__ import annotations

import pytest

from tenxgraph.testing.memory_stores import MakeMemoryStore, MemoryStoreContract


class TestMemoryStoreContract(MemoryStoreContract):
    @pytest.fixture
    def make_memory_store(self, make_memory_store: MakeMemoryStore) -> MakeMemoryStore:
        """Each backend of the conftest (the fixture is parametrized by ``memory_backend``)."""
        return make_memory_store
