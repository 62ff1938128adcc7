"""Media store backends for the contract: filesystem, SQLite, Postgres.

``make_media_store(**options)`` opens a store of the parametrized kind; the
stores one test makes share their storage (a directory, a SQLite file, a
Postgres schema), created for the test and removed afterwards, so the suite
runs again and again against the shared server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.storage.media import FilesystemMediaStore, MediaStore, SqliteMediaStore
from tests.storage.conftest import PG_DSN, drop_schema

MEDIA_BACKENDS = ["filesystem", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

MakeMediaStore = Callable[..., MediaStore]


@pytest.fixture(params=MEDIA_BACKENDS)
def media_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_media_store(
    media_backend: str, tmp_path: Path, pg_schema: str
) -> AsyncIterator[MakeMediaStore]:
    made: list[MediaStore] = []

    def make(**options: Any) -> MediaStore:
        store: MediaStore
        if media_backend == "filesystem":
            store = FilesystemMediaStore(tmp_path / "media", **options)
        elif media_backend == "sqlite":
            store = SqliteMediaStore(tmp_path / "media.db", **options)
        else:
            from tenxgraph.storage.media import PgMediaStore

            store = PgMediaStore(PG_DSN, schema=pg_schema, **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()
    if media_backend == "postgres":
        await drop_schema(pg_schema)
