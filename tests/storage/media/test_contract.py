"""The media store contract (``tenxgraph.testing``), run against every backend.

The backends are the parametrized ``make_media_store`` fixture of this
directory's ``conftest.py``: filesystem, SQLite and Postgres.
"""

from __future__ import annotations

import pytest

from tenxgraph.testing.media_stores import MakeMediaStore, MediaStoreContract


class TestMediaStoreContract(MediaStoreContract):
    @pytest.fixture
    def make_media_store(self, make_media_store: MakeMediaStore) -> MakeMediaStore:
        """Each backend of the conftest (the fixture is parametrized by ``media_backend``)."""
        return make_media_store
