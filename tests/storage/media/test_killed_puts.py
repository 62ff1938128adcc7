"""A process killed (SIGKILL) in the middle of a put leaves no object, and a purge reclaims it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.storage.conftest import PG_DSN, drop_schema
from tests.storage.media._put_worker import open_store

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(
    params=["filesystem", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def where(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str
) -> AsyncIterator[tuple[str, str]]:
    kind = str(request.param)
    if kind == "filesystem":
        yield kind, str(tmp_path / "media")
    elif kind == "sqlite":
        yield kind, str(tmp_path / "media.db")
    else:
        yield kind, f"{PG_DSN}|{pg_schema}"
        await drop_schema(pg_schema)


def kill_mid_put(kind: str, where: str, marker: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.storage.media._put_worker", kind, where, str(marker)],
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, f"the worker exited early ({child.returncode})"
            assert time.monotonic() < deadline, "the worker never staged its chunks"
            time.sleep(0.02)
    finally:
        child.kill()
        child.wait()


async def test_a_killed_put_leaves_no_object_and_purge_reclaims_it(
    where: tuple[str, str], tmp_path: Path
) -> None:
    kind, location = where
    kill_mid_put(kind, location, tmp_path / "staged")
    store = open_store(kind, location)
    try:
        assert await store.alist_media() == []
        assert await store.alist_tenants() == []
        assert await store.apurge_uploads(older_than=3600) == 0  # too recent to be abandoned
        assert await store.apurge_uploads(older_than=0) == 1
        assert await store.apurge_uploads(older_than=0) == 0
        ref = await store.aput(b"\x89PNG\r\n\x1a\n" + bytes(21 * 1024 - 8), "image/png")
        assert len(await store.aget(ref)) == 21 * 1024
    finally:
        await store.aclose()
