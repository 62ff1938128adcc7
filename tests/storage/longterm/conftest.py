"""Memory store backends for the contract: in-memory, SQLite (both vector paths), Postgres.

``make_memory_store(**options)`` opens a store of the parametrized kind; the
SQLite file and the Postgres schema are made for the test and removed
afterwards, so the suite runs again and again against the shared server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.storage.longterm import InMemoryStore, MemoryStore, SqliteMemoryStore
from tests.storage.conftest import PG_DSN, drop_schema

MEMORY_BACKENDS = [
    "memory",
    "sqlite",  # vectors scored by brute force
    "sqlite-vec",  # vectors in the sqlite-vec index (extra ``vectors``)
    pytest.param("postgres", marks=pytest.mark.postgres),
]

MakeMemoryStore = Callable[..., MemoryStore]


@pytest.fixture(params=MEMORY_BACKENDS)
def memory_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_memory_store(
    memory_backend: str, tmp_path: Path, pg_schema: str
) -> AsyncIterator[MakeMemoryStore]:
    made: list[MemoryStore] = []

    def make(**options: Any) -> MemoryStore:
        store: MemoryStore
        if memory_backend == "memory":
            store = InMemoryStore(**options)
        elif memory_backend == "sqlite":
            store = SqliteMemoryStore(tmp_path / "memory.db", vector_index=False, **options)
        elif memory_backend == "sqlite-vec":
            wanted = options.get("embedder") is not None
            store = SqliteMemoryStore(tmp_path / "memory.db", vector_index=wanted, **options)
            assert store.vector_index == ("sqlite-vec" if wanted else None)
        else:
            from tenxgraph.storage.longterm import PgMemoryStore

            store = PgMemoryStore(PG_DSN, schema=pg_schema, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()
    if memory_backend == "postgres":
        await drop_schema(pg_schema)
