"""Large media never sit whole in memory: a put from a file and a streamed read hold a few chunks.

Python's own allocations are traced (``tracemalloc``) while 16 MiB go
through each backend; the peak must stay a small fraction of the file. This
checks that the paths stream, not how fast they are (``bench/`` measures).
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

from tenxgraph.testing.media_stores import PNG_HEAD
from tests.storage.media.conftest import MakeMediaStore

SIZE = 16 * 1024 * 1024
PEAK = 6 * 1024 * 1024
"""Three eighths of the file: a put measured about 3.2 MB on an idle machine and 4.2 MB on a
loaded one (chunks waiting in worker-thread hand-offs); a path that held the file whole would
pass 16 MB."""


async def test_put_from_a_path_and_a_streamed_read_hold_a_few_chunks(
    make_media_store: MakeMediaStore, tmp_path: Path
) -> None:
    store = make_media_store()
    source = tmp_path / "big.png"
    with source.open("wb") as file:
        file.write(PNG_HEAD)
        for _ in range(SIZE // (1024 * 1024)):
            file.write(os.urandom(1024 * 1024))
    await store.aput(b"warm up the connection and the tables", "text/plain")
    tracemalloc.start()
    try:
        ref = await store.aput(source, "image/png")
        _, put_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        total = 0
        async with store.aopen(ref) as stream:
            async for chunk in stream:
                total += len(chunk)
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == SIZE + len(PNG_HEAD)
    assert put_peak < PEAK, f"a put of {SIZE} bytes peaked at {put_peak} bytes"
    assert read_peak < PEAK, f"a read of {SIZE} bytes peaked at {read_peak} bytes"
