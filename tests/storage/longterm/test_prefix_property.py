"""Property: a prefix search returns exactly the items whose namespace starts with the prefix.

Namespaces are drawn from a tiny alphabet so that prefixes, near misses
(``a`` and ``ab``) and characters around the separator in byte order
(``.`` before ``/``, ``0`` after it) collide often. Each example is a fresh
tenant of one store per backend, so examples never see each other's items.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenxgraph.storage.longterm import InMemoryStore, MemoryStore, SqliteMemoryStore

parts = st.text(alphabet="a.0b-", min_size=1, max_size=3)
namespaces = st.lists(parts, min_size=1, max_size=3).map(tuple)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    made: MemoryStore = (
        InMemoryStore() if request.param == "memory" else SqliteMemoryStore(tmp_path / "m.db")
    )
    yield made
    made.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stored=st.lists(namespaces, min_size=1, max_size=8), prefix=st.lists(parts, max_size=3))
def test_prefix_search_is_part_wise(
    store: MemoryStore, stored: list[tuple[str, ...]], prefix: list[str]
) -> None:
    user = uuid.uuid4().hex
    for index, namespace in enumerate(stored):
        store.put(namespace, f"k{index}", {"text": "needle"}, user_id=user)
    expected = {
        (namespace, f"k{index}")
        for index, namespace in enumerate(stored)
        if namespace[: len(prefix)] == tuple(prefix)
    }
    for query in (None, "needle"):
        found = store.search(tuple(prefix), query=query, limit=100, user_id=user)
        assert {(item.namespace, item.key) for item in found} == expected
    listed = store.list_namespaces(tuple(prefix), user_id=user)
    assert listed == sorted({namespace for namespace, _ in expected})
