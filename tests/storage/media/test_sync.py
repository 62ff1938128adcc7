"""The sync twins from plain sync code (no running loop), as a script or a sync tool uses them."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tenxgraph import _sync
from tenxgraph.errors import MediaNotFoundError
from tenxgraph.storage.media import FilesystemMediaStore, MediaStore, SqliteMediaStore
from tenxgraph.testing.media_stores import sample
from tests.storage.conftest import PG_DSN


def stores(tmp_path: Path, pg_schema: str) -> list[MediaStore]:
    from tenxgraph.storage.media import PgMediaStore

    return [
        FilesystemMediaStore(tmp_path / "media", chunk_size=1024),
        SqliteMediaStore(tmp_path / "media.db", chunk_size=1024),
        PgMediaStore(PG_DSN, schema=pg_schema, chunk_size=1024),
    ]


@pytest.mark.postgres
def test_every_operation_has_a_sync_twin(tmp_path: Path, pg_schema: str) -> None:
    import psycopg

    data = sample(10_000)
    source = tmp_path / "in.png"
    source.write_bytes(data)
    try:
        for store in stores(tmp_path, pg_schema):
            with store:
                with source.open("rb") as file:
                    ref = store.put(file, "image/png", user_id="u1")
                assert store.exists(ref, user_id="u1") and not store.exists(ref)
                with store.open(ref, user_id="u1") as stream:
                    chunks = list(stream)
                assert len(chunks) == 10 and b"".join(chunks) == data
                assert store.get(ref.url or "", user_id="u1") == data
                assert [info.key for info in store.list_media("u1")] == [ref.sha256]
                assert store.list_tenants() == ["u1"]
                assert store.purge_uploads() == 0
                assert store.delete(ref, user_id="u1")
                with pytest.raises(MediaNotFoundError):
                    store.open(ref, user_id="u1")
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{pg_schema}" CASCADE')


def test_threads_share_a_store(tmp_path: Path) -> None:
    store = SqliteMediaStore(tmp_path / "media.db", chunk_size=1024)
    results: dict[int, bool] = {}

    def work(n: int) -> None:
        try:
            data = sample(5000, seed=n % 3)
            ref = store.put(data, "image/png", user_id=f"t{n % 2}")
            with store.open(ref, user_id=f"t{n % 2}") as stream:
                results[n] = stream.read() == data
        finally:
            _sync._loop().close()  # the thread's private loop, left open by the sync bridge

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == dict.fromkeys(range(8), True)
    assert len(store.list_media("t0")) + len(store.list_media("t1")) == 6
    store.close()
