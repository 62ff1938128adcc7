"""Delete listeners of a media store: held weakly when bound, their failures logged."""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pytest

from tenxgraph.storage.media import FilesystemMediaStore

PNG = b"\x89PNG\r\n\x1a\n" + bytes(100)


class Watcher:
    def __init__(self) -> None:
        self.heard: list[str] = []

    async def released(self, user_id: str, key: str) -> None:
        self.heard.append(key)


async def test_a_bound_listener_is_held_weakly(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", fsync=False)
    kept, dropped = Watcher(), Watcher()
    store.add_delete_listener(kept.released)
    store.add_delete_listener(dropped.released)
    heard = dropped.heard
    del dropped
    gc.collect()

    ref = await store.aput(PNG, "image/png")
    assert await store.adelete(ref)

    assert kept.heard == [ref.sha256] and heard == []


async def test_a_failing_listener_is_logged_and_the_others_still_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FilesystemMediaStore(tmp_path / "media", fsync=False)

    async def broken(user_id: str, key: str) -> None:
        raise ConnectionError("provider unreachable")

    watcher = Watcher()
    store.add_delete_listener(broken)
    store.add_delete_listener(watcher.released)
    ref = store.put(PNG, "image/png")

    with caplog.at_level(logging.WARNING, logger="tenxgraph.storage.media"):
        assert store.delete(ref)  # the sync twin too

    assert watcher.heard == [ref.sha256]
    assert "provider unreachable" in caplog.text and not store.exists(ref)
