"""``checkpointer_at``: the backend a setting names; a bad setting refused before anything opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenxgraph.errors import ConfigError
from tenxgraph.storage import checkpointer_at
from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache, SqliteCheckpointer
from tests.storage.conftest import PG_DSN, REDIS_URL


async def test_a_path_is_a_sqlite_file_opened_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    checkpointer = checkpointer_at(str(path))
    assert isinstance(checkpointer, SqliteCheckpointer)
    assert not path.exists()  # nothing opened yet
    try:
        assert await checkpointer.alist_threads() == []
        assert path.exists()
    finally:
        await checkpointer.aclose()
    assert isinstance(checkpointer_at(tmp_path / "other.sqlite"), SqliteCheckpointer)


async def test_a_dsn_is_postgres_with_the_redis_cache_in_front() -> None:
    cached = checkpointer_at(PG_DSN, redis=REDIS_URL)
    plain = checkpointer_at(PG_DSN.replace("postgresql://", "postgres://", 1))
    try:
        assert isinstance(cached, PgCheckpointer) and isinstance(plain, PgCheckpointer)
        assert isinstance(cached._cache, RedisThreadCache)
        assert plain._cache is None
    finally:
        await cached.aclose()
        await plain.aclose()


@pytest.mark.parametrize(
    ("location", "redis", "message"),
    [
        ("threads.sqlite", "redis://localhost:6379", "Redis cache sits in front of Postgres"),
        ("", None, "no thread store given"),
    ],
)
def test_bad_settings_are_refused_before_anything_opens(
    tmp_path: Path, location: str, redis: str | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        checkpointer_at(location and str(tmp_path / location), redis=redis)
    assert list(tmp_path.iterdir()) == []


async def test_a_pool_size_sizes_a_postgres_pool() -> None:
    sized = checkpointer_at(PG_DSN, pool_size=3)
    assert isinstance(sized, PgCheckpointer) and sized._db._pool._max_size == 3
    await sized.aclose()


def test_a_pool_size_with_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pool_size is a Postgres setting"):
        checkpointer_at(str(tmp_path / "threads.sqlite"), pool_size=3)
    assert list(tmp_path.iterdir()) == []
