"""The media store conformance suite: a pytest base class every backend's tests subclass.

Subclass ``MediaStoreContract`` in a test module (the class name must start
with ``Test`` for pytest to collect it) and give it a ``make_media_store``
fixture returning a factory ``(**options) -> MediaStore`` for your backend::

    class TestMyMediaStore(MediaStoreContract):
        @pytest_asyncio.fixture
        async def make_media_store(self, tmp_path):
            made = []

            def make(**options):
                made.append(MyMediaStore(tmp_path / "media", **options))
                return made[-1]

            yield make
            for store in made:
                await store.aclose()

Every store one test makes must share that test's storage, and the storage
must start empty. The options the suite passes are ``max_bytes`` and
``chunk_size``, the ``MediaStore`` constructor's.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tenxgraph.core.state.message_block import MediaRef
from tenxgraph.errors import (
    ConfigError,
    InvalidIdError,
    InvalidMediaKeyError,
    MediaNotFoundError,
    MediaTooLargeError,
    MediaTypeError,
    TenxGraphError,
)
from tenxgraph.storage.media import MediaStore

__all__ = ["MakeMediaStore", "MediaStoreContract", "sample"]

MakeMediaStore = Callable[..., MediaStore]
"""Opens a media store of the backend under test: ``make_media_store(**options)``."""

PNG_HEAD = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
JPEG_HEAD = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"


def sample(size: int, head: bytes = PNG_HEAD, seed: int = 0) -> bytes:
    """``size`` bytes starting with ``head`` (a PNG signature by default), then varied filler."""
    filler = hashlib.sha256(str(seed).encode()).digest() * (size // 32 + 1)
    return (head + filler)[:size]


def key_of(data: bytes) -> str:
    """The key a store gives ``data``: its SHA-256."""
    return hashlib.sha256(data).hexdigest()


class _Broken(TenxGraphError):
    """The failure a test's stream raises midway."""


class MediaStoreContract:
    """What every media store does, as pytest test methods.

    The subclass provides the ``make_media_store`` fixture; the suite's
    ``store`` fixture is ``make_media_store()``.
    """

    pytestmark = [pytest.mark.asyncio]

    @pytest.fixture
    def make_media_store(self) -> MakeMediaStore:
        """Override this in your subclass: the factory of the backend under test."""
        pytest.fail(
            f"{type(self).__name__} must define a `make_media_store` fixture returning "
            "a factory `(**options) -> MediaStore`",
            pytrace=False,
        )

    @pytest.fixture
    def store(self, make_media_store: MakeMediaStore) -> MediaStore:
        """A media store of the backend under test, with default options."""
        return make_media_store()

    # Putting and getting

    async def test_put_returns_a_graph_media_ref_and_get_returns_the_bytes(
        self, store: MediaStore
    ) -> None:
        """A put answers a ref to ``graph://media/{sha256}``; ref, URL or key reads back."""
        data = sample(300_000)
        ref = await store.aput(data, "image/png", filename="cat.png")
        key = key_of(data)
        assert (ref.kind, ref.url, ref.sha256) == ("url", f"graph://media/{key}", key)
        assert (ref.mime_type, ref.size_bytes, ref.filename) == ("image/png", 300_000, "cat.png")
        assert await store.aget(ref) == data
        assert await store.aget(ref.url or "") == data
        assert await store.aget(key) == data

    async def test_the_same_bytes_are_stored_once(self, store: MediaStore) -> None:
        """Content addressing: the same bytes, however they arrive, are one object."""
        data = sample(5000)
        first = await store.aput(data, "image/png")
        second = await store.aput(iter([data[:7], data[7:]]), "image/png")
        assert first.url == second.url
        assert [info.key for info in await store.alist_media()] == [key_of(data)]

    async def test_concurrent_puts_of_the_same_bytes_make_one_object(
        self, store: MediaStore
    ) -> None:
        """Puts racing with the same bytes all succeed, with one object at the end."""
        data = sample(40_000, seed=3)
        refs = await asyncio.gather(*(store.aput(data, "image/png") for _ in range(5)))
        assert {ref.url for ref in refs} == {f"graph://media/{key_of(data)}"}
        assert len(await store.alist_media()) == 1
        assert await store.aget(refs[0]) == data

    async def test_empty_media_is_stored(self, store: MediaStore) -> None:
        """Zero bytes are media too (the SHA-256 of nothing)."""
        ref = await store.aput(b"", "text/plain")
        assert ref.size_bytes == 0
        assert await store.aget(ref) == b""

    async def test_every_kind_of_input_gives_the_same_object(
        self, store: MediaStore, tmp_path: Path
    ) -> None:
        """Bytes, buffers, a path, sync and async files and streams store the same bytes."""
        data = sample(70_000, seed=1)
        path = tmp_path / "input.png"
        path.write_bytes(data)

        async def agen() -> AsyncIterator[bytes]:
            for start in range(0, len(data), 999):
                yield data[start : start + 999]

        with path.open("rb") as file:
            inputs: list[object] = [
                bytearray(data),
                memoryview(data),
                path,
                file,
                _AsyncFile(data),
                agen(),
                [data[:1], data[1:50_000], data[50_000:]],
                (bytes([byte]) for byte in data[:3000]),
            ]
            urls = [(await store.aput(item, "image/png")).url for item in inputs]  # type: ignore[arg-type]
        assert urls[:-1] == [f"graph://media/{key_of(data)}"] * 7
        assert urls[-1] == f"graph://media/{key_of(data[:3000])}"
        assert await store.aget(urls[0] or "") == data

    async def test_a_str_or_a_stream_of_str_is_refused(self, store: MediaStore) -> None:
        """Text is not bytes: refused with a ``ConfigError`` saying so, nothing stored."""
        with pytest.raises(ConfigError, match="encode text first"):
            await store.aput("hello", "text/plain")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="must yield bytes, but it yielded str"):
            await store.aput(iter([b"abc", "def"]), "text/plain")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="text mode"):
            await store.aput(io.StringIO("text"), "text/plain")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="got int"):
            await store.aput(42, "text/plain")  # type: ignore[arg-type]
        assert await store.alist_media() == []
        assert await store.apurge_uploads(older_than=0) == 0

    # Streaming reads

    async def test_open_streams_chunks_and_describes_the_media(
        self, make_media_store: MakeMediaStore
    ) -> None:
        """``aopen`` yields chunks of at most ``chunk_size`` and describes what it reads."""
        store = make_media_store(chunk_size=1024)
        data = sample(10_000, seed=2)
        ref = await store.aput(data, "image/png")
        async with store.aopen(ref) as stream:
            assert (stream.info.key, stream.info.size) == (key_of(data), 10_000)
            assert stream.info.mime_type == "image/png"
            chunks = [chunk async for chunk in stream]
        assert len(chunks) >= 10 and max(map(len, chunks)) <= 1024
        assert b"".join(chunks) == data
        stream = await store.aopen(ref)
        first = await anext(stream)
        assert first == data[: len(first)]
        assert first + await stream.aread() == data

    async def test_a_stream_closed_early_releases_what_it_held(
        self, make_media_store: MakeMediaStore
    ) -> None:
        """Streams left early release their files or cursors: the media can still be deleted."""
        store = make_media_store(chunk_size=1024)
        ref = await store.aput(sample(8192), "image/png")
        for _ in range(20):
            async with store.aopen(ref) as stream:
                await anext(stream)
        assert await store.adelete(ref)

    async def test_a_delete_during_a_read_ends_it_whole_or_as_missing(
        self, make_media_store: MakeMediaStore
    ) -> None:
        """A read that loses its media ends with all the bytes or ``MediaNotFoundError``."""
        store = make_media_store(chunk_size=1024)
        data = sample(20_000)
        ref = await store.aput(data, "image/png")
        async with store.aopen(ref) as stream:
            received = await anext(stream)
            assert await store.adelete(ref)
            try:
                received += await stream.aread()
            except MediaNotFoundError:
                return
        assert received == data  # a backend that keeps the open bytes readable

    # Failures leave nothing behind

    async def test_a_stream_failing_midway_stores_nothing(
        self, make_media_store: MakeMediaStore
    ) -> None:
        """A stream that raises midway: its error, no partial object, nothing staged left."""
        store = make_media_store(chunk_size=1024)
        data = sample(50_000, seed=4)
        kept = await store.aput(data, "image/png")

        def failing() -> Iterator[bytes]:
            yield data[:20_000]
            raise _Broken("the network dropped")

        async def afailing() -> AsyncIterator[bytes]:
            yield data[:20_000]
            raise _Broken("the network dropped")

        for stream in (failing(), afailing()):
            with pytest.raises(_Broken, match="network dropped"):
                await store.aput(stream, "image/png")
        assert [info.key for info in await store.alist_media()] == [key_of(data)]
        assert not await store.aexists(key_of(data[:20_000]))
        assert await store.aget(kept) == data
        assert await store.apurge_uploads(older_than=0) == 0

    async def test_a_cancelled_put_stores_nothing(self, make_media_store: MakeMediaStore) -> None:
        """A put cancelled midway leaves no object and nothing staged."""
        store = make_media_store(chunk_size=1024)
        started = asyncio.Event()

        async def endless() -> AsyncIterator[bytes]:
            yield PNG_HEAD + bytes(2000)
            started.set()
            await asyncio.Event().wait()
            yield b""  # never reached

        task = asyncio.create_task(store.aput(endless(), "image/png"))
        await started.wait()
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await store.alist_media() == []
        assert await store.apurge_uploads(older_than=0) == 0

    async def test_the_size_limit_refuses_bigger_media(
        self, make_media_store: MakeMediaStore
    ) -> None:
        """``max_bytes`` allows exactly that many bytes and refuses one more, streamed or not."""
        store = make_media_store(max_bytes=4096, chunk_size=1024)
        assert (await store.aput(sample(4096), "image/png")).size_bytes == 4096
        with pytest.raises(MediaTooLargeError, match="limit of 4096 bytes"):
            await store.aput(sample(4097, seed=1), "image/png")
        with pytest.raises(MediaTooLargeError, match="max_bytes"):
            await store.aput(iter([sample(3000, seed=2), bytes(3000)]), "image/png")
        assert [info.size for info in await store.alist_media()] == [4096]
        assert await store.apurge_uploads(older_than=0) == 0

    # MIME types

    async def test_a_mime_type_the_bytes_contradict_is_refused(self, store: MediaStore) -> None:
        """A declared type the first bytes contradict is refused, naming both types."""
        with pytest.raises(MediaTypeError, match=r"'image/png'.*JPEG image \(image/jpeg\)"):
            await store.aput(sample(5000, JPEG_HEAD), "image/png")
        with pytest.raises(MediaTypeError, match=r"'application/pdf'.*no checked type"):
            await store.aput(b"just some text", "application/pdf")
        with pytest.raises(MediaTypeError, match=r"'text/plain'.*PNG image \(image/png\)"):
            await store.aput(sample(2000), "text/plain")
        with pytest.raises(MediaTypeError, match="not a MIME type"):
            await store.aput(b"x", "png")
        assert await store.alist_media() == []

    async def test_mime_types_are_checked_detected_and_normalized(self, store: MediaStore) -> None:
        """Aliases and parameters are normalized; a missing type is detected."""
        jpeg = sample(3000, JPEG_HEAD)
        assert (await store.aput(jpeg, "IMAGE/JPG")).mime_type == "image/jpeg"
        assert (await store.aput(jpeg)).mime_type == "image/jpeg"
        assert (await store.aput(b"%PDF-1.7\n...")).mime_type == "application/pdf"
        assert (await store.aput(b"plain", "text/plain; charset=utf-8")).mime_type == "text/plain"
        assert (await store.aput(b"\x00\x01")).mime_type == "application/octet-stream"
        info = await store.ainfo(key_of(jpeg))
        assert info is not None and info.mime_type == "image/jpeg"

    # Keys and tenants

    async def test_malformed_keys_are_refused_before_any_io(self, store: MediaStore) -> None:
        """Keys that could name a path, or refs outside a store, raise ``InvalidMediaKeyError``."""
        bad: list[MediaRef | str] = [
            "../../etc/passwd",
            "graph://media/../../etc/passwd",
            "graph://media/" + "A" * 64,
            "graph://other/" + "a" * 64,
            "a" * 63,
            "a" * 64 + "/",
            MediaRef(kind="url", url="https://example.com/cat.png"),
            MediaRef(kind="file_id", file_id="file-1"),
        ]
        for locator in bad:
            with pytest.raises(InvalidMediaKeyError):
                await store.aget(locator)
            with pytest.raises(InvalidMediaKeyError):
                await store.adelete(locator)
        with pytest.raises(InvalidIdError, match="user_id"):
            await store.aput(b"x", "text/plain", user_id="")

    async def test_another_tenants_media_reads_as_missing(self, store: MediaStore) -> None:
        """Tenants are apart: another tenant's key is missing for every operation."""
        data = sample(6000)
        ref = await store.aput(data, "image/png", user_id="alice")
        assert await store.aexists(ref, user_id="alice")
        assert not await store.aexists(ref)  # the default tenant
        assert await store.ainfo(ref, user_id="bob") is None
        with pytest.raises(MediaNotFoundError, match="for user_id 'bob'"):
            await store.aget(ref, user_id="bob")
        with pytest.raises(MediaNotFoundError):
            await store.aopen(ref, user_id="bob")
        assert not await store.adelete(ref, user_id="bob")
        assert await store.alist_media("bob") == []
        assert await store.aget(ref, user_id="alice") == data

    async def test_each_tenant_has_its_own_copy(self, store: MediaStore) -> None:
        """The same bytes in two tenants are two objects; deleting one leaves the other."""
        data = sample(6000)
        ref = await store.aput(data, "image/png", user_id="alice")
        assert (await store.aput(data, "image/png", user_id="../bob")).url == ref.url
        assert await store.alist_tenants() == ["../bob", "alice"]
        assert await store.adelete(ref, user_id="alice")
        assert await store.aget(ref, user_id="../bob") == data
        assert await store.alist_tenants() == ["../bob"]

    async def test_delete_and_info(self, store: MediaStore) -> None:
        """``ainfo`` describes an object; ``adelete`` removes it once."""
        data = sample(1234)
        ref = await store.aput(data, "image/png")
        info = await store.ainfo(ref)
        assert info is not None
        assert (info.user_id, info.key, info.size, info.mime_type) == (
            "default",
            key_of(data),
            1234,
            "image/png",
        )
        assert info.created_at > 0 and info.url == ref.url
        assert await store.adelete(ref)
        assert not await store.adelete(ref)
        assert await store.ainfo(ref) is None
        with pytest.raises(MediaNotFoundError):
            await store.aget(ref)

    async def test_delete_listeners_hear_each_deletion_once(self, store: MediaStore) -> None:
        """A delete listener runs after a delete that removed media, and only then."""
        heard: list[tuple[str, str]] = []

        async def listener(user_id: str, key: str) -> None:
            heard.append((user_id, key))

        store.add_delete_listener(listener)
        ref = await store.aput(sample(100), "image/png", user_id="acme")
        assert not await store.adelete(ref, user_id="globex")
        assert await store.adelete(ref, user_id="acme")
        assert not await store.adelete(ref, user_id="acme")
        assert heard == [("acme", key_of(sample(100)))]
        with pytest.raises(MediaNotFoundError):
            await store.aget(ref, user_id="acme")

    async def test_list_media_pages_in_key_order(self, store: MediaStore) -> None:
        """``alist_media`` lists one tenant's objects in key order, page by page."""
        refs = [await store.aput(sample(100, seed=n), "image/png") for n in range(7)]
        keys = sorted(ref.sha256 or "" for ref in refs)
        await store.aput(sample(100, seed=99), "image/png", user_id="other")
        assert [info.key for info in await store.alist_media()] == keys
        first = await store.alist_media(limit=3)
        rest = await store.alist_media(after=first[-1].key)
        assert [info.key for info in first + rest] == keys
        assert await store.alist_media(limit=0) == []
        with pytest.raises(ConfigError, match="limit"):
            await store.alist_media(limit=-1)

    async def test_sync_twins_work_inside_a_running_loop(self, store: MediaStore) -> None:
        """The sync twins work even when called on a running event loop's thread."""
        data = sample(5000)
        ref = store.put(data, "image/png")
        assert store.get(ref) == data and store.exists(ref)
        with store.open(ref) as stream:
            assert b"".join(stream) == data
        assert [info.key for info in store.list_media()] == [key_of(data)]
        assert store.delete(ref)


class _AsyncFile:
    """A file whose ``read`` is a coroutine (as aiofiles' are)."""

    def __init__(self, data: bytes) -> None:
        self._file = io.BytesIO(data)

    async def read(self, size: int = -1) -> bytes:
        await asyncio.sleep(0)
        return self._file.read(size)
