"""A child process that dies in the middle of a put (run by ``test_killed_puts``).

``python -m tests.storage.media._put_worker KIND WHERE MARKER`` opens the
store (``KIND`` filesystem / sqlite / postgres; ``WHERE`` its directory, file
or ``dsn|schema``), starts putting a stream, and after some chunks have been
staged writes ``MARKER`` and waits to be killed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tenxgraph.storage.media import MediaStore


def open_store(kind: str, where: str) -> MediaStore:
    from tenxgraph.storage.media import FilesystemMediaStore, PgMediaStore, SqliteMediaStore

    if kind == "filesystem":
        return FilesystemMediaStore(where, chunk_size=1024)
    if kind == "sqlite":
        return SqliteMediaStore(where, chunk_size=1024)
    dsn, schema = where.split("|")
    return PgMediaStore(dsn, schema=schema, chunk_size=1024)


def stream(marker: Path) -> Iterator[bytes]:
    yield b"\x89PNG\r\n\x1a\n" + bytes(1016)
    for _ in range(20):
        yield bytes(1024)
    marker.write_text("staged")
    while True:
        time.sleep(1)
        yield b""


def main() -> None:
    kind, where, marker = sys.argv[1:4]
    open_store(kind, where).put(stream(Path(marker)), "image/png")


if __name__ == "__main__":
    main()
