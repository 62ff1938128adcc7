"""Provider files of stored media: the default send mode, one upload for concurrent first
sends, deletion at the provider when the media is deleted, Gemini's processing wait, and
configurable limits. Through the official SDKs against the local replay server.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tenxgraph.core.llm import (
    AnthropicModel,
    FileIdCache,
    GoogleModel,
    MediaLimits,
    MediaResolver,
    ModelRequest,
    OpenAIChatModel,
    ProviderFile,
)
from tenxgraph.core.llm._media_rules import OPENAI_CHAT_RULES
from tenxgraph.core.llm.media import prepare_media
from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import DocumentBlock, TextBlock, VideoBlock
from tenxgraph.errors import BadRequestError, ConfigError, ModelTimeoutError, ServerError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer, ThreadWrite
from tenxgraph.storage.media import FilesystemMediaStore, MediaPolicy
from tenxgraph.testing.replay import ReplayServer, chat_chunk

from .test_anthropic import text_stream as anthropic_text
from .test_google import text_stream as gemini_text

TENANT = "acme"
PDF = b"%PDF-1.7\n" + b"quarterly report " * 100
MP4 = b"\x00\x00\x00\x20ftypisom" + bytes(range(256)) * 8


@pytest.fixture
def store(tmp_path: Path) -> FilesystemMediaStore:
    return FilesystemMediaStore(tmp_path / "media", fsync=False)


@pytest.fixture
async def openai_client(server: ReplayServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0)
    yield client
    await client.close()


def asking(*blocks: Any) -> ModelRequest:
    content = [TextBlock(text="What is this?"), *blocks]
    return ModelRequest(messages=[Message(role="user", content=content)], user_id=TENANT)


def chat_answer(server: ReplayServer, text: str = "A report.") -> None:
    server.stream([chat_chunk({"role": "assistant", "content": text}, "stop"), "[DONE]"])


def openai_file(file_id: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(PDF),
        "created_at": 1764547200,
        "filename": "report.pdf",
        "purpose": "user_data",
        "status": "processed",
    }


def uploads(server: ReplayServer) -> list[str]:
    return [r.path for r in server.requests if r.method == "POST" and "/files" in r.path]


# --- the default: auto -------------------------------------------------------------------


async def test_by_default_large_media_is_uploaded_and_small_media_inlined(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    small = store.put(PDF, "application/pdf", user_id=TENANT)
    large = store.put(PDF + bytes(1024 * 1024), "application/pdf", user_id=TENANT)
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)
    assert model.media is not None and model.media.send == "auto"
    server.reply(openai_file("file-large"))
    chat_answer(server)

    await model.complete(asking(DocumentBlock(media=small), DocumentBlock(media=large)))

    assert uploads(server) == ["/v1/files"]
    parts = server.requests[1].body["messages"][0]["content"]
    assert parts[1]["file"]["file_data"].startswith("data:application/pdf;base64,")
    assert parts[2] == {"type": "file", "file": {"file_id": "file-large"}}


async def test_auto_uploads_media_that_inline_would_put_over_the_request_limit(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    first = store.put(PDF + b"1", "application/pdf", user_id=TENANT)
    second = store.put(PDF + b"2", "application/pdf", user_id=TENANT)
    limits = MediaLimits(request_max=len(PDF) + 100)  # room for one of them inline
    model = OpenAIChatModel(
        "gpt-test", client=openai_client, media=MediaResolver(store, limits=limits)
    )
    server.reply(openai_file("file-second"))
    chat_answer(server)

    await model.complete(asking(DocumentBlock(media=first), DocumentBlock(media=second)))

    parts = server.requests[1].body["messages"][0]["content"]
    assert "file_data" in parts[1]["file"]
    assert parts[2] == {"type": "file", "file": {"file_id": "file-second"}}


async def test_auto_inlines_on_an_openai_compatible_server_without_a_files_api(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    large = store.put(PDF + bytes(1024 * 1024), "application/pdf", user_id=TENANT)
    model = OpenAIChatModel("llama-3", base_url=server.url + "/v1", media=store, max_retries=0)
    chat_answer(server)
    try:
        await model.complete(asking(DocumentBlock(media=large)))
    finally:
        await model.aclose()

    assert uploads(server) == []
    part = server.requests[0].body["messages"][0]["content"][1]
    assert part["file"]["file_data"].startswith("data:application/pdf;base64,")


# --- configurable limits -----------------------------------------------------------------


async def test_limits_replace_the_providers_defaults(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    resolver = MediaResolver(store, send="inline", limits=MediaLimits(inline_max={"document": 100}))
    model = OpenAIChatModel("gpt-test", client=openai_client, media=resolver)

    with pytest.raises(BadRequestError, match=r"over openai's 100-byte limit for inline document"):
        await model.complete(asking(DocumentBlock(media=ref)))
    too_big = MediaResolver(store, send="upload", limits=MediaLimits(upload_max=10))
    model = OpenAIChatModel("gpt-test", client=openai_client, media=too_big)
    with pytest.raises(BadRequestError, match=r"over the 10-byte limit of openai's file API"):
        await model.complete(asking(DocumentBlock(media=ref)))
    assert server.requests == []


def test_limits_are_checked_and_merged_by_kind(store: FilesystemMediaStore) -> None:
    rules = MediaLimits(inline_max={"image": 7}, request_max=9).applied_to(OPENAI_CHAT_RULES)
    assert rules.inline_max["image"] == 7 and rules.request_max == 9
    assert rules.inline_max["audio"] == OPENAI_CHAT_RULES.inline_max["audio"]
    assert rules.upload_max == OPENAI_CHAT_RULES.upload_max
    with pytest.raises(ConfigError, match=r"MediaLimits.inline_max\['image'\] must be an int"):
        MediaLimits(inline_max={"image": -1})
    with pytest.raises(ConfigError, match="ready_timeout must be >= 0"):
        MediaResolver(store, ready_timeout=-1)


# --- one upload for concurrent first sends -----------------------------------------------


async def test_concurrent_first_sends_of_the_same_media_upload_it_once(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    model = OpenAIChatModel(
        "gpt-test", client=openai_client, media=MediaResolver(store, send="upload")
    )
    server.reply(openai_file("file-once"))
    for _ in range(3):
        chat_answer(server)

    await asyncio.gather(*(model.complete(asking(DocumentBlock(media=ref))) for _ in range(3)))

    assert uploads(server) == ["/v1/files"]
    for request in server.requests[1:]:
        part = request.body["messages"][0]["content"][1]
        assert part == {"type": "file", "file": {"file_id": "file-once"}}


async def test_a_failed_upload_lets_the_next_waiting_send_upload(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    model = OpenAIChatModel(
        "gpt-test", client=openai_client, media=MediaResolver(store, send="upload")
    )
    server.reply({"error": {"message": "try later"}}, status=500)
    server.reply(openai_file("file-second-try"))
    chat_answer(server)

    results = await asyncio.gather(
        *(model.complete(asking(DocumentBlock(media=ref))) for _ in range(2)),
        return_exceptions=True,
    )

    assert sum(isinstance(r, ServerError) for r in results) == 1
    assert sum(isinstance(r, Message) for r in results) == 1
    assert uploads(server) == ["/v1/files", "/v1/files"]
    part = server.requests[2].body["messages"][0]["content"][1]
    assert part == {"type": "file", "file": {"file_id": "file-second-try"}}


async def test_the_cache_shares_one_upload_per_key_and_drops_its_locks() -> None:
    cache = FileIdCache()
    calls = []

    async def upload() -> ProviderFile:
        calls.append(1)
        number = len(calls)
        await asyncio.sleep(0.01)
        return ProviderFile(f"file-{number}")

    got = await asyncio.gather(
        *(cache.obtain("openai", TENANT, key, upload) for key in ("a", "a", "b", "a"))
    )

    assert [file.file_id for file in got] == ["file-1", "file-1", "file-2", "file-1"]
    assert len(calls) == 2 and cache._flights == {}
    assert await cache.forget(TENANT, "a") == {"openai": ProviderFile("file-1")}
    assert await cache.get("openai", TENANT, "a") is None


async def test_forgetting_waits_for_an_upload_in_flight() -> None:
    cache = FileIdCache()
    started = asyncio.Event()

    async def upload() -> ProviderFile:
        started.set()
        await asyncio.sleep(0.05)
        return ProviderFile("file-late")

    uploading = asyncio.create_task(cache.obtain("openai", TENANT, "a", upload))
    await started.wait()
    forgotten = await cache.forget(TENANT, "a")

    assert forgotten == {"openai": ProviderFile("file-late")}
    assert (await uploading).file_id == "file-late"
    assert await cache.get("openai", TENANT, "a") is None


# --- deleting provider files with their media --------------------------------------------


async def test_deleting_media_deletes_its_openai_file(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    resolver = MediaResolver(store, send="upload")
    model = OpenAIChatModel("gpt-test", client=openai_client, media=resolver)
    server.reply(openai_file("file-gone"))
    chat_answer(server)
    await model.complete(asking(DocumentBlock(media=ref)))
    server.reply({"id": "file-gone", "object": "file", "deleted": True})

    assert await store.adelete(ref, user_id=TENANT)

    delete = server.requests[-1]
    assert (delete.method, delete.path) == ("DELETE", "/v1/files/file-gone")
    endpoint = f"openai {server.url}/v1/"
    assert await resolver.file_ids.get(endpoint, TENANT, ref.sha256 or "") is None


async def test_deleting_a_thread_deletes_the_anthropic_file_of_its_media(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT, filename="report.pdf")
    checkpointer = InMemoryCheckpointer(media=MediaPolicy(store, grace=0))
    key = ThreadKey("t1", TENANT)
    message = Message(role="user", content=[DocumentBlock(media=ref)])
    await checkpointer.asave(key, ThreadWrite(0, [message], {}, [(0, 1)], node="user", step=0))
    client = anthropic.AsyncAnthropic(api_key="test", base_url=server.url, max_retries=0)
    model = AnthropicModel("claude-opus-4-7", client=client, media=MediaResolver(store))
    server.reply(
        {
            "id": "file_011CNha8iCJcU1wXNR6q4V8w",
            "type": "file",
            "filename": "report.pdf",
            "mime_type": "application/pdf",
            "size_bytes": len(PDF),
            "created_at": "2026-12-01T12:00:00Z",
        }
    )
    server.stream(anthropic_text("A report."))
    try:
        limited = MediaResolver(store, limits=MediaLimits(inline_max={"document": 10}))
        model = AnthropicModel("claude-opus-4-7", client=client, media=limited)
        await model.complete(asking(DocumentBlock(media=ref)))  # over 10 bytes: uploaded
        server.reply({"id": "file_011CNha8iCJcU1wXNR6q4V8w", "type": "file_deleted"})

        assert await checkpointer.adelete_thread(key)
    finally:
        await client.close()

    assert not await store.aexists(ref, user_id=TENANT)
    delete = server.requests[-1]
    assert (delete.method, delete.path) == ("DELETE", "/v1/files/file_011CNha8iCJcU1wXNR6q4V8w")


async def test_a_sync_delete_inside_a_loop_deletes_the_file_and_closes_the_client_it_made(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    """``store.delete`` from async code runs on a helper thread's loop, where the model has
    no client: one is made for the deletion and closed after it (no unclosed socket)."""
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    resolver = MediaResolver(store, send="upload")
    model = OpenAIChatModel(
        "gpt-test", base_url=server.url + "/v1", api_key="test", max_retries=0, media=resolver
    )
    server.reply(openai_file("file-sync"))
    chat_answer(server)
    try:
        await model.complete(asking(DocumentBlock(media=ref)))
        server.reply({"id": "file-sync", "object": "file", "deleted": True})
        assert store.delete(ref, user_id=TENANT)
    finally:
        await model.aclose()
    gc.collect()  # an unclosed client would warn here, failing the test

    delete = server.requests[-1]
    assert (delete.method, delete.path) == ("DELETE", "/v1/files/file-sync")


async def test_a_failed_provider_delete_is_logged_and_the_media_still_deleted(
    server: ReplayServer,
    store: FilesystemMediaStore,
    openai_client: openai.AsyncOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    model = OpenAIChatModel(
        "gpt-test", client=openai_client, media=MediaResolver(store, send="upload")
    )
    server.reply(openai_file("file-stuck"))
    chat_answer(server)
    await model.complete(asking(DocumentBlock(media=ref)))
    server.reply({"error": {"message": "unavailable"}}, status=503)

    with caplog.at_level(logging.WARNING, logger="tenxgraph.core.llm"):
        assert await store.adelete(ref, user_id=TENANT)

    assert not await store.aexists(ref, user_id=TENANT)
    assert "deleting its file file-stuck" in caplog.text


async def test_a_provider_delete_that_hangs_is_abandoned_after_the_timeout(
    store: FilesystemMediaStore, caplog: pytest.LogCaptureFixture
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    resolver = MediaResolver(store, send="upload", delete_timeout=0.05)

    async def upload(*_: object) -> ProviderFile:
        return ProviderFile("file-slow")

    async def hang(file_id: str) -> None:
        await asyncio.sleep(60)

    await prepare_media(
        asking(DocumentBlock(media=ref)), OPENAI_CHAT_RULES, resolver, upload=upload, delete=hang
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    with caplog.at_level(logging.WARNING, logger="tenxgraph.core.llm"):
        assert await store.adelete(ref, user_id=TENANT)
    assert loop.time() - started < 5
    assert "deleting its file file-slow" in caplog.text


# --- Gemini: files still processing ------------------------------------------------------


def gemini_file(name: str, state: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": f"files/{name}",
        "mimeType": "video/mp4",
        "sizeBytes": str(len(MP4)),
        "uri": f"https://generativelanguage.googleapis.com/v1beta/files/{name}",
        "expirationTime": "2099-01-01T00:00:00Z",
        "state": state,
        **extra,
    }


def gemini_upload(server: ReplayServer, name: str, state: str) -> None:
    upload_url = f"{server.url}/upload/v1beta/files?upload_id={name}&upload_protocol=resumable"
    server.reply({}, headers={"x-goog-upload-url": upload_url})
    server.reply({"file": gemini_file(name, state)}, headers={"x-goog-upload-status": "final"})


def gemini(server: ReplayServer, resolver: MediaResolver) -> GoogleModel:
    return GoogleModel(
        "gemini-2.5-flash", api_key="test", base_url=server.url, max_retries=0, media=resolver
    )


async def test_gemini_waits_for_a_processing_video_before_sending_it(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    ref = store.put(MP4, "video/mp4", user_id=TENANT)
    model = gemini(server, MediaResolver(store, send="upload"))
    gemini_upload(server, "clip", "PROCESSING")
    server.reply(gemini_file("clip", "PROCESSING"))
    server.reply(gemini_file("clip", "ACTIVE"))
    server.stream(gemini_text("A clip."))
    try:
        reply = await model.complete(asking(VideoBlock(media=ref)))
        server.reply({})  # the file's deletion
        assert await store.adelete(ref, user_id=TENANT)
    finally:
        await model.aclose()

    assert reply.text() == "A clip."
    polls = [r for r in server.requests if r.method == "GET"]
    assert [r.path.split("?")[0] for r in polls] == ["/v1beta/files/clip"] * 2
    part = server.requests[4].body["contents"][0]["parts"][1]
    file_data = part.get("fileData") or part["file_data"]
    assert (file_data.get("fileUri") or file_data["file_uri"]).endswith("/files/clip")
    delete = server.requests[-1]
    assert (delete.method, delete.path.split("?")[0]) == ("DELETE", "/v1beta/files/clip")


async def test_gemini_failing_to_process_a_video_is_a_clear_error(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    ref = store.put(MP4, "video/mp4", user_id=TENANT)
    model = gemini(server, MediaResolver(store, send="upload"))
    gemini_upload(server, "broken", "PROCESSING")
    server.reply(gemini_file("broken", "FAILED", error={"code": 3, "message": "bad codec"}))
    try:
        with pytest.raises(BadRequestError, match=r"failed to process .*files/broken.*bad codec"):
            await model.complete(asking(VideoBlock(media=ref)))
    finally:
        await model.aclose()


async def test_gemini_still_processing_after_the_ready_timeout_is_a_timeout(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    ref = store.put(MP4, "video/mp4", user_id=TENANT)
    model = gemini(server, MediaResolver(store, send="upload", ready_timeout=0))
    gemini_upload(server, "slow", "PROCESSING")
    try:
        with pytest.raises(ModelTimeoutError, match=r"still being processed after 0 s"):
            await model.complete(asking(VideoBlock(media=ref)))
    finally:
        await model.aclose()
    assert [r.method for r in server.requests] == ["POST", "POST"]  # no generate request
