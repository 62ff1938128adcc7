"""Adapters sending media-store refs, through the official SDKs against the local replay server.

Each provider gets ``graph://media/{key}`` refs resolved before the request:
inline base64, or uploaded once through its file API (the upload endpoints
are served by the replay server too) and sent by file id. Limits are
checked before anything is sent, with the block named.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import (
    AnthropicModel,
    FileIdCache,
    GoogleModel,
    MediaResolver,
    ModelRequest,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ProviderFile,
)
from tenxgraph.core.state.message import Message
from tenxgraph.core.state.message_block import (
    DocumentBlock,
    ImageBlock,
    MediaRef,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from tenxgraph.errors import BadRequestError, ConfigError, MediaNotFoundError
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.storage.media import FilesystemMediaStore
from tenxgraph.testing.replay import ReplayServer, chat_chunk

from .test_anthropic import text_stream as anthropic_text
from .test_google import text_stream as gemini_text
from .test_openai_responses import response as responses_body

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.7\n" + b"quarterly report " * 100
TENANT = "acme"


@pytest.fixture
def store(tmp_path: Path) -> FilesystemMediaStore:
    return FilesystemMediaStore(tmp_path / "media", fsync=False)


@pytest.fixture
async def openai_client(server: ReplayServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(api_key="test", base_url=server.url + "/v1", max_retries=0)
    yield client
    await client.close()


@pytest.fixture
async def anthropic_client(server: ReplayServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(api_key="test", base_url=server.url, max_retries=0)
    yield client
    await client.close()


def asking(*blocks: Any, user_id: str | None = TENANT) -> ModelRequest:
    content = [TextBlock(text="What is this?"), *blocks]
    return ModelRequest(messages=[Message(role="user", content=content)], user_id=user_id)


async def answer(model: Any, request: ModelRequest) -> Message:
    return await model.complete(request)  # type: ignore[no-any-return]


def chat_answer(server: ReplayServer, text: str = "A picture.") -> None:
    server.stream([chat_chunk({"role": "assistant", "content": text}, "stop"), "[DONE]"])


def responses_answer(server: ReplayServer) -> None:
    done = responses_body(
        "completed",
        [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "A report.", "annotations": []}],
            }
        ],
    )
    server.stream([("response.completed", {"type": "response.completed", "response": done})])


def openai_file(file_id: str, size: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 1764547200,
        "filename": "report.pdf",
        "purpose": "user_data",
        "status": "processed",
        **extra,
    }


def multipart_holds(body: Any, data: bytes) -> bool:
    return isinstance(body, bytes) and data in body


# --- OpenAI Chat Completions -------------------------------------------------------------


async def test_openai_chat_inlines_a_stored_image_as_a_data_url(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT, filename="photo.png")
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)
    chat_answer(server)

    reply = await answer(model, asking(ImageBlock(media=ref)))

    assert reply.text() == "A picture."
    parts = server.requests[0].body["messages"][0]["content"]
    expected = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert parts[1] == {"type": "image_url", "image_url": {"url": expected}}


async def test_media_repeated_in_a_history_is_inlined_in_every_message(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)
    chat_answer(server)
    looked = Message(role="user", content=[TextBlock(text="This?"), ImageBlock(media=ref)])
    messages = [looked, Message.text_message("A pattern.", role="assistant"), looked]

    await answer(model, ModelRequest(messages=messages, user_id=TENANT))

    sent = server.requests[0].body["messages"]
    expected = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert sent[0]["content"][1]["image_url"]["url"] == expected
    assert sent[2]["content"][1]["image_url"]["url"] == expected
    assert messages[0].content[1] == ImageBlock(media=ref)  # the request's messages are untouched


async def test_openai_chat_uploads_a_document_once_and_reuses_its_file_id(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT, filename="report.pdf")
    resolver = MediaResolver(store, send="upload")
    model = OpenAIChatModel("gpt-test", client=openai_client, media=resolver)
    server.reply(openai_file("file-6F2ksmvXxt4VdoqmHRw6kL", len(PDF)))
    chat_answer(server, "A report.")
    chat_answer(server, "Still a report.")

    await answer(model, asking(DocumentBlock(media=ref)))
    await answer(model, asking(DocumentBlock(media=ref)))

    upload, first, second = server.requests
    assert (upload.method, upload.path) == ("POST", "/v1/files")
    assert (upload.header("content-type") or "").startswith("multipart/form-data")
    assert multipart_holds(upload.body, PDF) and b"user_data" in upload.body
    assert b'filename="report.pdf"' in upload.body
    for request in (first, second):
        part = request.body["messages"][0]["content"][1]
        assert part == {"type": "file", "file": {"file_id": "file-6F2ksmvXxt4VdoqmHRw6kL"}}


async def test_openai_chat_images_stay_inline_even_when_uploading(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    """Chat Completions takes no image by file id, so upload mode inlines images."""
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = OpenAIChatModel(
        "gpt-test", client=openai_client, media=MediaResolver(store, send="upload")
    )
    chat_answer(server)

    await answer(model, asking(ImageBlock(media=ref)))

    assert len(server.requests) == 1  # no upload
    url = server.requests[0].body["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")


async def test_auto_uploads_only_media_over_the_threshold(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    small = store.put(b"%PDF-1.7 tiny", "application/pdf", user_id=TENANT)
    large = store.put(PDF, "application/pdf", user_id=TENANT)
    resolver = MediaResolver(store, send="auto", upload_over=1000)
    model = OpenAIChatModel("gpt-test", client=openai_client, media=resolver)
    server.reply(openai_file("file-large", len(PDF)))
    chat_answer(server)

    await answer(model, asking(DocumentBlock(media=small), DocumentBlock(media=large)))

    assert server.requests[0].path == "/v1/files" and multipart_holds(server.requests[0].body, PDF)
    parts = server.requests[1].body["messages"][0]["content"]
    assert parts[1]["file"]["file_data"].startswith("data:application/pdf;base64,")
    assert parts[2] == {"type": "file", "file": {"file_id": "file-large"}}


async def test_a_tool_result_holding_stored_media_is_resolved(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = OpenAIResponsesModel("gpt-5.1", client=openai_client, media=store)
    responses_answer(server)
    call = ToolCallBlock(id="call_1", name="chart", args={})
    messages = [
        Message.text_message("Draw it"),
        Message(role="assistant", content=[call]),
        Message(
            role="tool", content=[ToolResultBlock(call_id="call_1", output=[ImageBlock(media=ref)])]
        ),
    ]

    await answer(model, ModelRequest(messages=messages, user_id=TENANT))

    output = server.requests[0].body["input"][2]["output"]
    assert output[0]["image_url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


# --- OpenAI Responses -------------------------------------------------------------------


async def test_responses_uploads_images_and_files_and_sends_their_ids(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    image = store.put(PNG, "image/png", user_id=TENANT, filename="photo.png")
    report = store.put(PDF, "application/pdf", user_id=TENANT, filename="report.pdf")
    model = OpenAIResponsesModel(
        "gpt-5.1", client=openai_client, media=MediaResolver(store, send="upload")
    )
    server.reply(openai_file("file-image", len(PNG), filename="photo.png"))
    server.reply(openai_file("file-report", len(PDF)))
    responses_answer(server)

    await answer(model, asking(ImageBlock(media=image), DocumentBlock(media=report)))

    assert [r.path for r in server.requests] == ["/v1/files", "/v1/files", "/v1/responses"]
    assert multipart_holds(server.requests[0].body, PNG)
    assert multipart_holds(server.requests[1].body, PDF)
    parts = server.requests[2].body["input"][0]["content"]
    assert parts[1] == {"type": "input_image", "detail": "auto", "file_id": "file-image"}
    assert parts[2] == {"type": "input_file", "file_id": "file-report"}


# --- Anthropic ----------------------------------------------------------------------------


async def test_anthropic_inlines_a_stored_image_as_base64(
    server: ReplayServer, store: FilesystemMediaStore, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = AnthropicModel("claude-opus-4-7", client=anthropic_client, media=store)
    server.stream(anthropic_text("A picture."))

    await answer(model, asking(ImageBlock(media=ref)))

    block = server.requests[0].body["messages"][0]["content"][1]
    assert block == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(PNG).decode(),
        },
    }


async def test_anthropic_uploads_a_pdf_through_the_files_api(
    server: ReplayServer, store: FilesystemMediaStore, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT, filename="report.pdf")
    model = AnthropicModel(
        "claude-opus-4-7", client=anthropic_client, media=MediaResolver(store, send="upload")
    )
    server.reply(
        {
            "id": "file_011CNha8iCJcU1wXNR6q4V8w",
            "type": "file",
            "filename": "report.pdf",
            "mime_type": "application/pdf",
            "size_bytes": len(PDF),
            "created_at": "2026-12-01T12:00:00Z",
            "downloadable": False,
        }
    )
    server.stream(anthropic_text("A report."))
    server.stream(anthropic_text("Again."))

    await answer(model, asking(DocumentBlock(media=ref)))
    await answer(model, asking(DocumentBlock(media=ref)))

    assert [r.path for r in server.requests] == ["/v1/files", "/v1/messages", "/v1/messages"]
    assert multipart_holds(server.requests[0].body, PDF)
    document = server.requests[2].body["messages"][0]["content"][1]
    assert document["source"] == {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}


async def test_anthropic_image_over_its_inline_limit_is_refused_before_sending(
    server: ReplayServer, store: FilesystemMediaStore, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    big = store.put(PNG + bytes(5 * 1024 * 1024), "image/png", user_id=TENANT)
    inline = MediaResolver(store, send="inline")
    model = AnthropicModel("claude-opus-4-7", client=anthropic_client, media=inline)

    with pytest.raises(BadRequestError) as caught:
        await answer(model, asking(ImageBlock(media=big)))

    message = str(caught.value)
    assert "message 0 block 1" in message and "5242880-byte limit for inline image" in message
    assert "send='upload'" in message
    assert server.requests == []


# --- Gemini -------------------------------------------------------------------------------


def gemini_upload(server: ReplayServer, name: str, expires: str) -> None:
    """The two replies of a resumable upload: the session, then the finalized file."""
    upload_url = f"{server.url}/upload/v1beta/files?upload_id={name}&upload_protocol=resumable"
    server.reply({}, headers={"x-goog-upload-url": upload_url})
    server.reply(
        {
            "file": {
                "name": f"files/{name}",
                "mimeType": "application/pdf",
                "sizeBytes": str(len(PDF)),
                "uri": f"https://generativelanguage.googleapis.com/v1beta/files/{name}",
                "expirationTime": expires,
                "state": "ACTIVE",
            }
        },
        headers={"x-goog-upload-status": "final"},
    )


def gemini_parts(server: ReplayServer, index: int) -> list[dict[str, Any]]:
    body = server.requests[index].body
    return body["contents"][0]["parts"]  # type: ignore[no-any-return]


async def test_gemini_uploads_through_the_files_api_and_sends_the_uri(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT, filename="report.pdf")
    model = GoogleModel(
        "gemini-2.5-flash",
        api_key="test",
        base_url=server.url,
        max_retries=0,
        media=MediaResolver(store, send="upload"),
    )
    gemini_upload(server, "report1", "2099-01-01T00:00:00Z")
    server.stream(gemini_text("A report."))
    server.stream(gemini_text("Again."))
    try:
        await answer(model, asking(DocumentBlock(media=ref)))
        await answer(model, asking(DocumentBlock(media=ref)))
    finally:
        await model.aclose()

    start, chunk, first, second = server.requests
    assert start.path.startswith("/upload/v1beta/files")
    assert start.header("x-goog-upload-protocol") == "resumable"
    assert chunk.body == PDF and "finalize" in (chunk.header("x-goog-upload-command") or "")
    uri = "https://generativelanguage.googleapis.com/v1beta/files/report1"
    for request in (first, second):
        file_data = gemini_parts(server, server.requests.index(request))[1]
        file_data = file_data.get("fileData") or file_data["file_data"]
        assert (file_data.get("fileUri") or file_data["file_uri"]) == uri


async def test_gemini_uploads_again_once_its_file_has_expired(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    ref = store.put(PDF, "application/pdf", user_id=TENANT)
    model = GoogleModel(
        "gemini-2.5-flash",
        api_key="test",
        base_url=server.url,
        max_retries=0,
        media=MediaResolver(store, send="upload"),
    )
    gemini_upload(server, "old", "2020-01-01T00:00:00Z")  # already expired when it comes
    server.stream(gemini_text("A report."))
    gemini_upload(server, "new", "2099-01-01T00:00:00Z")
    server.stream(gemini_text("Again."))
    try:
        await answer(model, asking(DocumentBlock(media=ref)))
        await answer(model, asking(DocumentBlock(media=ref)))
    finally:
        await model.aclose()

    assert len(server.requests) == 6  # two uploads of two requests each, two answers


async def test_gemini_inlines_by_default(server: ReplayServer, store: FilesystemMediaStore) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = GoogleModel("gemini-2.5-flash", api_key="test", base_url=server.url, media=store)
    server.stream(gemini_text("A picture."))
    try:
        await answer(model, asking(ImageBlock(media=ref)))
    finally:
        await model.aclose()

    part = gemini_parts(server, 0)[1]
    inline = part.get("inlineData") or part["inline_data"]
    assert base64.urlsafe_b64decode(inline["data"] + "==") == PNG  # the SDK's encoding


# --- what is refused, and where -----------------------------------------------------------


async def test_a_type_the_provider_does_not_accept_is_named_with_its_block(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    heic = store.put(b"\x00\x00\x00\x18ftypheic" + bytes(64), "image/heic", user_id=TENANT)
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)
    history = [Message.text_message("Hi"), Message.text_message("Hello", role="assistant")]
    request = asking(ImageBlock(media=heic))
    request.messages[:0] = history

    with pytest.raises(
        BadRequestError, match=r"message 2 block 1: image/heic is not an image type openai accepts"
    ):
        await answer(model, request)
    assert server.requests == []


async def test_a_request_over_the_total_inline_limit_is_refused(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    parts = [
        store.put(PNG + bytes(n) + bytes(7 * 1024 * 1024), "image/png", user_id=TENANT)
        for n in range(3)
    ]
    model = GoogleModel(
        "gemini-2.5-flash",
        api_key="test",
        base_url=server.url,
        media=MediaResolver(store, send="inline"),
    )
    try:
        with pytest.raises(BadRequestError, match=r"message 0 block 3: the inline media .* over"):
            await answer(model, asking(*[ImageBlock(media=ref) for ref in parts]))
    finally:
        await model.aclose()
    assert server.requests == []


async def test_media_already_inline_counts_toward_the_request_total(
    server: ReplayServer, store: FilesystemMediaStore
) -> None:
    inline = MediaRef(
        kind="data",
        data_base64=base64.b64encode(PNG + bytes(15 * 1024 * 1024)).decode(),
        mime_type="image/png",
    )
    stored = store.put(PNG + bytes(6 * 1024 * 1024), "image/png", user_id=TENANT)
    model = GoogleModel(
        "gemini-2.5-flash",
        api_key="test",
        base_url=server.url,
        media=MediaResolver(store, send="inline"),
    )
    try:
        with pytest.raises(BadRequestError, match=r"message 0 block 2: the inline media .* over"):
            await answer(model, asking(ImageBlock(media=inline), ImageBlock(media=stored)))
    finally:
        await model.aclose()
    assert server.requests == []


async def test_stored_media_without_a_media_option_is_refused(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = OpenAIChatModel("gpt-test", client=openai_client)

    with pytest.raises(BadRequestError, match=r"message 0 block 1: graph://media/.* pass media="):
        await answer(model, asking(ImageBlock(media=ref)))
    assert server.requests == []


async def test_another_tenants_media_does_not_resolve(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)

    with pytest.raises(MediaNotFoundError, match=r"message 0 block 1: .* user_id 'globex'"):
        await answer(model, asking(ImageBlock(media=ref), user_id="globex"))
    with pytest.raises(MediaNotFoundError, match="user_id 'default'"):
        await answer(model, asking(ImageBlock(media=ref), user_id=None))
    assert server.requests == []


def test_send_must_be_a_known_mode(store: FilesystemMediaStore) -> None:
    with pytest.raises(ConfigError, match="send must be"):
        MediaResolver(store, send="sometimes")  # type: ignore[arg-type]


async def test_a_durable_cache_sees_every_upload_and_is_asked_first(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    """A FileIdCache subclass (a database, say) answers for ids uploaded by another process."""
    ref = store.put(PDF, "application/pdf", user_id=TENANT)

    class Remembered(FileIdCache):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[tuple[str, str, str]] = []

        async def get(self, provider: str, user_id: str, key: str) -> ProviderFile | None:
            self.seen.append((provider, user_id, key))
            return ProviderFile("file-from-yesterday")

    cache = Remembered()
    model = OpenAIChatModel(
        "gpt-test",
        client=openai_client,
        media=MediaResolver(store, send="upload", file_ids=cache),
    )
    chat_answer(server)

    await answer(model, asking(DocumentBlock(media=ref)))

    assert len(server.requests) == 1  # no upload: the cache knew the file
    [(provider, user_id, key)] = cache.seen
    assert provider == f"openai {server.url}/v1/" and user_id == TENANT and key == ref.sha256
    part = server.requests[0].body["messages"][0]["content"][1]
    assert part == {"type": "file", "file": {"file_id": "file-from-yesterday"}}


# --- through an Agent ---------------------------------------------------------------------


async def test_an_agent_resolves_media_for_the_runs_user_id(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = store.put(PNG, "image/png", user_id=TENANT)
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)
    app = create_agent(model, [], checkpointer=InMemoryCheckpointer())
    chat_answer(server)
    question = Message(role="user", content=[TextBlock(text="What?"), ImageBlock(media=ref)])

    config = {"configurable": {"thread_id": "t1", "user_id": TENANT}}

    result = await app.ainvoke({"messages": [question]}, config)

    assert result["messages"][-1].text() == "A picture."
    stored = await app.aget_state(config)
    assert stored is not None
    assert stored.context[0].content[1].media.url == ref.url  # the thread keeps the ref
    url = server.requests[0].body["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")


async def test_refs_outside_the_store_are_sent_as_they_were(
    server: ReplayServer, store: FilesystemMediaStore, openai_client: openai.AsyncOpenAI
) -> None:
    ref = MediaRef(kind="url", url="https://example.com/cat.png", mime_type="image/png")
    model = OpenAIChatModel("gpt-test", client=openai_client, media=store)
    chat_answer(server)

    await answer(model, asking(ImageBlock(media=ref)))

    part = server.requests[0].body["messages"][0]["content"][1]
    assert part == {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}


class StreamOnlyStore(FilesystemMediaStore):
    """A store that refuses whole reads: only ``aopen`` (a stream of chunks) gets its bytes."""

    async def aget(self, media: MediaRef | str, *, user_id: str = "default") -> bytes:
        raise AssertionError("an upload read the media whole")


async def test_an_upload_streams_the_media_from_the_store_rather_than_reading_it_whole(
    server: ReplayServer, tmp_path: Path, openai_client: openai.AsyncOpenAI
) -> None:
    store = StreamOnlyStore(tmp_path / "media", fsync=False, chunk_size=1024)
    big = PDF + bytes(range(256)) * 64  # several chunks
    ref = store.put(big, "application/pdf", user_id=TENANT, filename="report.pdf")
    model = OpenAIChatModel(
        "gpt-test", client=openai_client, media=MediaResolver(store, send="upload")
    )
    server.reply(openai_file("file-streamed", len(big)))
    chat_answer(server, "A report.")

    await answer(model, asking(DocumentBlock(media=ref)))

    upload, sent = server.requests
    assert multipart_holds(upload.body, big)
    assert sent.body["messages"][0]["content"][1] == {
        "type": "file",
        "file": {"file_id": "file-streamed"},
    }
