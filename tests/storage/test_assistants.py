"""The assistants' store on SQLite and Postgres: versions, the latest, per user, and reopening."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.errors import AlreadyExistsError
from tenxgraph.storage.assistants import (
    Assistant,
    AssistantStore,
    MemoryAssistants,
    PgAssistants,
    SqliteAssistants,
)

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def opener(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Callable[[], Any]]:
    """Opens a store over the same database each call (a reopened server)."""
    schema = f"tg_assist_{uuid.uuid4().hex[:10]}"
    opened: list[AssistantStore] = []

    def open_store() -> AssistantStore:
        store: AssistantStore = (
            SqliteAssistants(str(tmp_path / "a.sqlite"))
            if request.param == "sqlite"
            else PgAssistants(PG_DSN, schema=schema)
        )
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        await store.aclose()
    if request.param == "postgres":
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _lifecycle(store: AssistantStore) -> None:
    made = await store.acreate(Assistant("a1", "agent", "u", name="one", config={"k": 1}))
    assert made.version == 1
    with pytest.raises(AlreadyExistsError, match="'a1' exists"):
        await store.acreate(Assistant("a1", "agent", "u"))
    assert (
        await store.acreate(Assistant("a1", "agent", "u"), if_exists="do_nothing")
    ).name == "one"
    changed = await store.aupdate("u", "a1", {"name": "two"})
    assert changed is not None and (changed.version, changed.name, changed.config) == (
        2,
        "two",
        {"k": 1},
    )
    assert [a.version for a in await store.aversions("u", "a1")] == [2, 1]
    assert (await store.aset_latest("u", "a1", 1)) is not None
    assert await store.aset_latest("u", "a1", 7) is None
    assert await store.aget("someone else", "a1") is None
    assert await store.aupdate("u", "missing", {"name": "x"}) is None


async def test_memory_store_keeps_versions() -> None:
    store = MemoryAssistants()
    await _lifecycle(store)
    assert (await store.aget("u", "a1")).name == "one"  # type: ignore[union-attr]


async def test_sql_stores_keep_versions_across_a_reopen(opener: Callable[[], Any]) -> None:
    await _lifecycle(opener())
    again: AssistantStore = opener()
    found = await again.aget("u", "a1")
    assert found is not None and (found.version, found.name) == (1, "one")
    assert [a.assistant_id for a in await again.asearch("u")] == ["a1"]
    made = await asyncio.gather(*(again.aupdate("u", "a1", {"name": f"n{i}"}) for i in range(5)))
    assert sorted(a.version for a in made if a) == [3, 4, 5, 6, 7]  # no version twice
    assert await again.adelete("u", "a1") and not await again.adelete("u", "a1")
    assert await again.asearch("u") == []
