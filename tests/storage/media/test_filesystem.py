"""The filesystem store's own promises: names under its root, atomic publication, damage found."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from tenxgraph.errors import ConfigError, CorruptRecordError, StorageError
from tenxgraph.storage.media import FilesystemMediaStore
from tenxgraph.testing.media_stores import sample


def files_under(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


def test_next_to_a_sqlite_file_names_a_sibling_directory(tmp_path: Path) -> None:
    store = FilesystemMediaStore.next_to(tmp_path / "threads.db", fsync=False)
    assert store.root == tmp_path / "threads.db-media"
    assert not store.fsync


def test_no_name_under_the_root_comes_from_the_caller(tmp_path: Path) -> None:
    root = tmp_path / "sandbox" / "media"
    store = FilesystemMediaStore(root)
    data = sample(3000)
    for user_id in ["../../escaped", "/etc", "Alice", "alice", "a/b\\c"]:
        store.put(data, "image/png", user_id=user_id)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sandbox"]
    assert [p.name for p in (tmp_path / "sandbox").iterdir()] == ["media"]
    tenants = sorted(p.name for p in (root / "tenants").iterdir())
    expected = ["../../escaped", "/etc", "Alice", "alice", "a/b\\c"]
    assert tenants == sorted(hashlib.sha256(u.encode()).hexdigest() for u in expected)
    assert store.list_tenants() == sorted(expected)  # case kept apart, ids read back whole


def test_an_object_is_its_bytes_file_plus_a_small_description(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media")
    data = sample(5000)
    ref = store.put(data, "image/png")
    key = ref.sha256 or ""
    tenant = tmp_path / "media" / "tenants" / hashlib.sha256(b"default").hexdigest()
    assert (tenant / key[:2] / key).read_bytes() == data
    assert (tenant / "user_id").read_text() == "default"
    assert files_under(tmp_path / "media" / "uploads") == []
    assert {p.name for p in (tenant / key[:2]).iterdir()} == {key, f"{key}.json"}


def test_a_failed_put_leaves_no_file(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", chunk_size=1024)

    def broken() -> object:
        yield sample(5000)
        raise OSError("disk went away")

    with pytest.raises(OSError, match="disk went away"):
        store.put(broken(), "image/png")  # type: ignore[arg-type]
    assert files_under(tmp_path / "media") == []


def test_a_truncated_file_fails_its_check_when_read(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", chunk_size=1024)
    ref = store.put(sample(5000), "image/png")
    info = store.info(ref)
    assert info is not None
    with open(info.location, "r+b") as file:
        file.truncate(3000)
    with pytest.raises(CorruptRecordError, match="3000 bytes, not the recorded 5000"):
        store.get(ref)


def test_a_changed_byte_fails_the_hash_check_at_the_end_of_the_stream(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media", chunk_size=1024)
    data = sample(5000)
    ref = store.put(data, "image/png")
    info = store.info(ref)
    assert info is not None
    with open(info.location, "r+b") as file:
        file.seek(4000)
        file.write(b"!")
    received = []
    with (
        pytest.raises(CorruptRecordError, match="SHA-256 is not the key"),
        store.open(ref) as stream,
    ):
        received.extend(stream)
    assert b"".join(received)[:4000] == data[:4000]


def test_purge_removes_only_idle_uploads(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media")
    store.put(b"seed", "text/plain")  # creates uploads/
    uploads = tmp_path / "media" / "uploads"
    stale, fresh = uploads / "dead.part", uploads / "alive.part"
    stale.write_bytes(b"half a file")
    fresh.write_bytes(b"being written")
    an_hour_ago = time.time() - 3700
    os.utime(stale, (an_hour_ago, an_hour_ago))
    assert store.purge_uploads() == 1
    assert files_under(uploads) == [fresh]
    assert store.purge_uploads(older_than=0) == 1
    with pytest.raises(ConfigError, match="older_than"):
        store.purge_uploads(older_than=-1)


def test_objects_missing_their_description_still_read(tmp_path: Path) -> None:
    store = FilesystemMediaStore(tmp_path / "media")
    data = sample(2000)
    ref = store.put(data, "image/png")
    info = store.info(ref)
    assert info is not None
    Path(info.location).with_suffix(".json").unlink()
    described = store.info(ref)
    assert described is not None
    assert (described.size, described.mime_type) == (2000, "application/octet-stream")
    assert store.get(ref) == data


def test_a_root_that_cannot_be_written_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = FilesystemMediaStore(blocker / "media")
    with pytest.raises(StorageError, match=r"media store at .*file/media"):
        store.put(b"x", "text/plain")


@pytest.mark.parametrize("root", ["", 42])
def test_a_root_must_be_a_path(root: object) -> None:
    with pytest.raises(ConfigError, match="root must be a directory path"):
        FilesystemMediaStore(root)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [({"max_bytes": -1}, "max_bytes"), ({"chunk_size": 100}, "chunk_size")],
)
def test_options_are_checked(tmp_path: Path, options: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FilesystemMediaStore(tmp_path, **options)  # type: ignore[arg-type]
