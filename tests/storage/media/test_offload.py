"""Checkpointers with a media store: large inline media offloaded on save, released on delete.

Real pairs: memory + filesystem, SQLite + the filesystem store beside it
(``media=True``), SQLite + a SQLite store in the same file, Postgres (with
and without its Redis cache) + a Postgres store in the same schema.
"""

from __future__ import annotations

import base64
import os
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.graph import StateGraph
from tenxgraph.core.state import AgentState, ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import ImageBlock, MediaRef, TextBlock, ToolResultBlock
from tenxgraph.storage.checkpointer import (
    Checkpointer,
    InMemoryCheckpointer,
    SqliteCheckpointer,
    ThreadWrite,
)
from tenxgraph.storage.media import FilesystemMediaStore, MediaStore, SqliteMediaStore
from tenxgraph.storage.media.gc import acollect
from tenxgraph.storage.media.offload import MediaPolicy
from tests.storage.conftest import PG_DSN, REDIS_URL, drop_redis_keys, drop_schema

PAIRS = [
    "memory+filesystem",
    "sqlite+beside",
    "sqlite+sqlite",
    pytest.param("postgres+postgres", marks=pytest.mark.postgres),
    pytest.param("postgres+redis+postgres", marks=[pytest.mark.postgres, pytest.mark.redis]),
]

MakePair = Callable[..., tuple[Checkpointer, MediaStore]]


def png(size: int) -> bytes:
    """A PNG signature followed by random bytes: a unique 'image' of ``size`` bytes."""
    return b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8)


def inline(data: bytes, mime_type: str = "image/png", **fields: Any) -> MediaRef:
    return MediaRef(
        kind="data", data_base64=base64.b64encode(data).decode(), mime_type=mime_type, **fields
    )


@pytest.fixture(params=PAIRS)
async def make_pair(
    request: pytest.FixtureRequest, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> AsyncIterator[MakePair]:
    kind = str(request.param)
    made: list[Checkpointer | MediaStore] = []

    def make(**policy: Any) -> tuple[Checkpointer, MediaStore]:
        store: MediaStore
        checkpointer: Checkpointer
        if kind == "memory+filesystem":
            store = FilesystemMediaStore(tmp_path / "media", fsync=False)
            checkpointer = InMemoryCheckpointer(media=MediaPolicy(store, **policy))
        elif kind == "sqlite+beside":
            path = tmp_path / "threads.db"
            if policy:
                store = FilesystemMediaStore.next_to(path)
                checkpointer = SqliteCheckpointer(path, media=MediaPolicy(store, **policy))
            else:
                checkpointer = SqliteCheckpointer(path, media=True)
                assert checkpointer.media is not None
                store = checkpointer.media.store
        elif kind == "sqlite+sqlite":
            store = SqliteMediaStore(tmp_path / "threads.db")
            checkpointer = SqliteCheckpointer(
                tmp_path / "threads.db", media=MediaPolicy(store, **policy)
            )
        else:
            from tenxgraph.storage.checkpointer import PgCheckpointer, RedisThreadCache
            from tenxgraph.storage.media import PgMediaStore

            store = PgMediaStore(PG_DSN, schema=pg_schema)
            redis = RedisThreadCache(REDIS_URL, prefix=redis_prefix) if "redis" in kind else None
            checkpointer = PgCheckpointer(
                PG_DSN, schema=pg_schema, redis=redis, media=MediaPolicy(store, **policy)
            )
        made.extend([checkpointer, store])
        return checkpointer, store

    yield make
    for thing in made:
        await thing.aclose()
    if kind.startswith("postgres"):
        await drop_schema(pg_schema)
    if "redis" in kind:
        await drop_redis_keys(redis_prefix)


async def append(checkpointer: Checkpointer, key: ThreadKey, *messages: Message) -> None:
    stored = await checkpointer.aload(key)
    version, length = (0, 0) if stored is None else (stored.version, stored.log_length)
    incarnation = None if stored is None else stored.incarnation
    write = ThreadWrite(
        version,
        list(messages),
        {},
        [(0, length + len(messages))],
        node="test",
        step=0,
        expected_incarnation=incarnation,
    )
    await checkpointer.asave(key, write)


async def test_large_inline_media_is_stored_once_and_referenced(make_pair: MakePair) -> None:
    checkpointer, store = make_pair()
    key = ThreadKey("t1", "acme")
    big, small = png(200_000), png(2_000)
    sent = Message.multimodal_message(
        [
            TextBlock(text="look"),
            ImageBlock(media=inline(big, filename="cat.png", width=10)),
            ImageBlock(media=inline(small)),
        ]
    )
    await append(checkpointer, key, sent)
    await append(checkpointer, key, Message.multimodal_message([ImageBlock(media=inline(big))]))

    stored = await checkpointer.aload(key)
    assert stored is not None
    first = stored.context[0].content[1]
    assert isinstance(first, ImageBlock)
    ref = first.media
    assert ref.kind == "url" and ref.url and ref.url.startswith("graph://media/")
    assert (ref.filename, ref.width, ref.mime_type, ref.size_bytes) == (
        "cat.png",
        10,
        "image/png",
        len(big),
    )
    small_block = stored.context[0].content[2]
    assert isinstance(small_block, ImageBlock) and small_block.media.kind == "data"
    assert await store.aget(ref, user_id="acme") == big
    assert [info.key for info in await store.alist_media("acme")] == [ref.sha256]
    assert all(len(m.model_dump_json()) < 5_000 for m in stored.context)
    # the caller's message is a value: not changed by the save
    assert isinstance(sent.content[1], ImageBlock) and sent.content[1].media.kind == "data"


async def test_sqlite_rows_hold_no_large_base64(tmp_path: Path) -> None:
    checkpointer = SqliteCheckpointer(tmp_path / "app.db", media=True)
    await append(checkpointer, ThreadKey("t"), Message.image_message(inline(png(300_000))))
    await checkpointer.aclose()
    with sqlite3.connect(tmp_path / "app.db") as conn:
        longest = conn.execute("SELECT max(length(body)) FROM messages").fetchone()[0]
    assert longest < 2_000
    assert (tmp_path / "app.db-media").is_dir()


async def test_tool_result_media_and_a_wrong_declared_type(make_pair: MakePair) -> None:
    checkpointer, store = make_pair()
    key = ThreadKey("tools")
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + os.urandom(100_000)
    result = ToolResultBlock(call_id="c1", output=[ImageBlock(media=inline(jpeg))])
    await append(checkpointer, key, Message.tool_message([result]))
    stored = await checkpointer.aload(key)
    assert stored is not None
    block = stored.context[0].content[0]
    assert isinstance(block, ToolResultBlock) and isinstance(block.output, list)
    image = block.output[0]
    assert isinstance(image, ImageBlock) and image.media.kind == "url"
    assert image.media.mime_type == "image/jpeg"  # declared image/png; the bytes say JPEG
    assert await store.aget(image.media) == jpeg


async def test_deleting_a_thread_releases_media_only_it_referenced(make_pair: MakePair) -> None:
    checkpointer, store = make_pair(grace=0)
    shared, own = png(100_000), png(100_000)
    a, b = ThreadKey("a", "acme"), ThreadKey("b", "acme")
    await append(checkpointer, a, Message.image_message(inline(shared)))
    await append(checkpointer, a, Message.image_message(inline(own)))
    await append(checkpointer, b, Message.image_message(inline(shared)))
    assert len(await store.alist_media("acme")) == 2

    assert await checkpointer.adelete_thread(a)
    remaining = await store.alist_media("acme")
    assert [info.size for info in remaining] == [len(shared)]
    assert await checkpointer.adelete_thread(b)
    assert await store.alist_media("acme") == []


async def test_gc_deletes_unreferenced_media_past_the_grace_period(make_pair: MakePair) -> None:
    checkpointer, store = make_pair()
    key = ThreadKey("kept", "acme")
    await append(checkpointer, key, Message.image_message(inline(png(100_000))))
    orphan = await store.aput(png(5_000), "image/png", user_id="acme")
    other_tenant = await store.aput(png(5_000), "image/png", user_id="globex")

    young = await acollect(checkpointer, store)  # default grace: an hour
    assert (young.deleted, young.referenced, young.young) == ([], 1, 2)

    dry = await acollect(checkpointer, store, grace=0, dry_run=True)
    assert {info.key for info in dry.deleted} == {orphan.sha256, other_tenant.sha256}
    assert await store.aexists(orphan, user_id="acme")

    report = await acollect(checkpointer, store, user_id="acme", grace=0)
    assert [info.key for info in report.deleted] == [orphan.sha256]
    assert report.freed_bytes == 5_000
    assert not await store.aexists(orphan, user_id="acme")
    assert await store.aexists(other_tenant, user_id="globex")
    stored = await checkpointer.aload(key)
    assert stored is not None
    for ref in (b.media for b in stored.context[0].content if isinstance(b, ImageBlock)):
        assert await store.aexists(ref, user_id="acme")


async def test_a_gc_racing_a_save_is_undone_after_the_commit(make_pair: MakePair) -> None:
    """The object a save reuses is deleted between its put and its commit: it is put back."""
    checkpointer, store = make_pair()
    image = png(100_000)
    ref = await store.aput(image, "image/png")
    real_put = store.aput
    raced: list[MediaRef] = []

    async def put_then_collect(*args: Any, **kwargs: Any) -> MediaRef:
        stored = await real_put(*args, **kwargs)
        if not raced:  # the save's own put; the gc finds no reference yet and deletes
            raced.append(stored)
            await store.adelete(stored)
        return stored

    store.aput = put_then_collect  # type: ignore[method-assign]
    try:
        await append(checkpointer, ThreadKey("t"), Message.image_message(inline(image)))
    finally:
        store.aput = real_put  # type: ignore[method-assign]
    assert raced and await store.aget(ref) == image


def _answer(state: AgentState) -> list[Message]:
    return [Message.text_message("A cat.", role="assistant")]


async def test_the_warm_thread_holds_the_stored_refs_not_the_bytes(
    make_pair: MakePair,
) -> None:
    checkpointer, store = make_pair()
    graph = StateGraph(AgentState)
    graph.add_node("answer", _answer)
    graph.set_entry_point("answer")
    app = graph.compile(checkpointer)
    picture = png(300_000)
    sent = Message.image_message(inline(picture, filename="cat.png"), "What is this?")
    config = {"thread_id": "cat", "user_id": "acme"}
    await app.acreate_thread(config, [])  # a run keeps a thread warm unless it created it

    result = await app.ainvoke({"messages": [sent]}, config)

    session = app.warm.take(ThreadKey("cat", "acme"))
    assert session is not None and session.approx_bytes < 10_000  # not the 400 KB of base64
    warm = session.revive(AgentState)
    assert warm is not None
    assert result["messages"][-1].text() == "A cat."
    for messages in (warm.context, (await checkpointer.aget_state(config)).context):
        media = next(b for b in messages[0].content if isinstance(b, ImageBlock)).media
        assert media.kind == "url" and media.data_base64 is None
        assert store.get(media, user_id="acme") == picture and media.filename == "cat.png"
    assert sent.content[1].media.kind == "data"  # the caller's own message is not changed
    app.warm.keep(session)

    await app.ainvoke({"messages": [Message.text_message("And now?")]}, config)
    state = await app.aget_state(config)
    assert state is not None and [m.role for m in state.context] == ["user", "assistant"] * 2
    assert state.context[0].content[1].media.kind == "url"
