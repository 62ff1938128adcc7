"""``tenxgraph media ls/gc`` and ``threads export --with-media`` / ``threads import``.

Real stores: SQLite threads with the filesystem store beside the file, and
Postgres threads with a Postgres media store in the same schema.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from pathlib import Path

import pytest

from tenxgraph.cli.main import main
from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ImageBlock, MediaRef
from tenxgraph.storage.checkpointer import Checkpointer, SqliteCheckpointer, ThreadWrite
from tenxgraph.storage.media import FilesystemMediaStore, MediaPolicy, MediaStore
from tests.storage.conftest import PG_DSN


def png(size: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8)


async def save_image_thread(
    checkpointer: Checkpointer, thread: str, image: bytes, user: str = "acme"
) -> None:
    ref = MediaRef(kind="data", data_base64=base64.b64encode(image).decode(), mime_type="image/png")
    message = Message.image_message(ref, "what is this?")
    write = ThreadWrite(0, [message], {"note": "x"}, [(0, 1)], node="test", step=0)
    await checkpointer.asave(ThreadKey(thread, user), write)


@pytest.fixture
def app_db(tmp_path: Path) -> tuple[Path, bytes, MediaStore]:
    """A SQLite file with thread 'photo' whose image is offloaded, plus an orphan object."""
    path = tmp_path / "app.db"
    image = png(100_000)

    async def fill() -> None:
        checkpointer = SqliteCheckpointer(path, media=True)
        await save_image_thread(checkpointer, "photo", image)
        await checkpointer.aclose()

    asyncio.run(fill())
    store = FilesystemMediaStore.next_to(path)
    store.put(b"GIF89a" + os.urandom(20), "image/gif", user_id="acme")
    return path, image, store


def test_media_ls_marks_what_threads_use(
    app_db: tuple[Path, bytes, MediaStore], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _image, _store = app_db
    assert main(["media", "ls", str(path), "--user", "acme"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:3]]
    assert sorted((row[1], row[-1]) for row in rows) == [("100000", "yes"), ("26", "no")]


def test_media_gc_keeps_young_and_referenced_media(
    app_db: tuple[Path, bytes, MediaStore], capsys: pytest.CaptureFixture[str]
) -> None:
    path, image, store = app_db
    assert main(["media", "gc", str(path), "--user", "acme"]) == 0  # within the grace period
    assert "deleted 0 objects" in capsys.readouterr().out
    assert main(["media", "gc", str(path), "--user", "acme", "--grace", "0", "--dry-run"]) == 0
    assert "would delete 1 objects, 26 bytes" in capsys.readouterr().out
    assert len(store.list_media("acme")) == 2
    assert main(["media", "gc", str(path), "--all-users", "--grace", "0"]) == 0
    assert "deleted 1 objects, 26 bytes; kept 1 referenced" in capsys.readouterr().out
    (left,) = store.list_media("acme")
    assert store.get(left.key, user_id="acme") == image


def test_export_with_media_and_import_into_another_database(
    app_db: tuple[Path, bytes, MediaStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, image, _store = app_db
    bundle = tmp_path / "photo.json"
    args = ["threads", "export", "photo", str(path), "--user", "acme", "--with-media"]
    assert main([*args, "-o", str(bundle)]) == 0
    data = json.loads(bundle.read_text())
    (media,) = data["media"]
    assert base64.b64decode(media["data_base64"]) == image

    other = tmp_path / "other.db"
    assert main(["threads", "import", str(bundle), "--db", str(other), "--thread", "copy"]) == 0
    assert "imported thread copy (user acme) with 1 media" in capsys.readouterr().out

    async def check() -> None:
        checkpointer = SqliteCheckpointer(other)
        stored = await checkpointer.aload(ThreadKey("copy", "acme"))
        await checkpointer.aclose()
        assert stored is not None and stored.values == {"note": "x"}
        block = stored.context[0].content[1]
        assert isinstance(block, ImageBlock)
        assert FilesystemMediaStore.next_to(other).get(block.media, user_id="acme") == image

    asyncio.run(check())
    # importing again refuses to overwrite, and a damaged bundle is refused before saving
    assert main(["threads", "import", str(bundle), "--db", str(other), "--thread", "copy"]) == 1
    assert "exists already" in capsys.readouterr().err
    media["data_base64"] = base64.b64encode(png(100)).decode()
    bundle.write_text(json.dumps(data))
    assert main(["threads", "import", str(bundle), "--db", str(other), "--thread", "new"]) == 1
    assert "does not match its bytes" in capsys.readouterr().err


@pytest.mark.postgres
def test_media_commands_on_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    """Threads and media in the default schema of a DSN; tenants of the test's own."""
    from tenxgraph.storage.checkpointer import PgCheckpointer
    from tenxgraph.storage.media import PgMediaStore

    user, other = f"acme-{uuid.uuid4().hex[:8]}", f"globex-{uuid.uuid4().hex[:8]}"

    async def fill() -> None:
        store = PgMediaStore(PG_DSN)
        checkpointer = PgCheckpointer(PG_DSN, media=store)
        await save_image_thread(checkpointer, "pg-photo", png(100_000), user=user)
        await store.aput(b"GIF89a" + os.urandom(20), "image/gif", user_id=user)
        await store.aput(b"GIF89a" + os.urandom(20), "image/gif", user_id=other)
        await checkpointer.aclose()
        await store.aclose()

    async def clean() -> None:
        store = PgMediaStore(PG_DSN)
        checkpointer = PgCheckpointer(PG_DSN, media=MediaPolicy(store, grace=0))
        await checkpointer.adelete_thread(ThreadKey("pg-photo", user))
        for tenant in (user, other):
            for info in await store.alist_media(tenant):
                await store.adelete(info.key, user_id=tenant)
        await checkpointer.aclose()
        await store.aclose()

    asyncio.run(fill())
    try:
        assert main(["media", "ls", PG_DSN, "--user", user]) == 0
        assert "2 objects, 100026 bytes; 1 referenced" in capsys.readouterr().out
        assert main(["media", "gc", PG_DSN, "--user", user, "--grace", "0"]) == 0
        assert "deleted 1 objects, 26 bytes; kept 1 referenced" in capsys.readouterr().out
        assert main(["media", "ls", PG_DSN, "--user", other]) == 0  # another tenant's: kept
        assert "1 objects, 26 bytes; 0 referenced" in capsys.readouterr().out
    finally:
        asyncio.run(clean())


def test_threads_delete_leaves_young_media_to_gc(
    app_db: tuple[Path, bytes, MediaStore], capsys: pytest.CaptureFixture[str]
) -> None:
    """Media put under an hour ago may belong to a save in progress: delete keeps them."""
    path, _image, store = app_db
    assert main(["threads", "delete", "photo", str(path), "--user", "acme", "--yes"]) == 0
    assert capsys.readouterr().out.strip().endswith("deleted thread photo")
    assert len(store.list_media("acme")) == 2
    assert main(["media", "gc", str(path), "--user", "acme", "--grace", "0"]) == 0
    assert "deleted 2 objects" in capsys.readouterr().out
    assert store.list_media("acme") == []
