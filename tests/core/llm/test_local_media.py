"""The local model reads text only: media blocks reach it as placeholders naming what they were."""

from __future__ import annotations

import base64

import pytest

from tenxgraph.core.llm import ModelRequest
from tenxgraph.core.llm.local import LocalLlamaModel
from tenxgraph.core.state import Message
from tenxgraph.core.state.message_block import DataBlock, ImageBlock, MediaRef, TextBlock

pytest.importorskip("llama_cpp", reason="llama-cpp-python (extra 'local') is not installed")

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def local() -> LocalLlamaModel:
    return LocalLlamaModel(n_ctx=512, temperature=0.0)


async def test_media_blocks_become_text_placeholders(local: LocalLlamaModel) -> None:
    """A stored image (no media store needed) and inline data are described, never sent."""
    stored = MediaRef(
        kind="url",
        url="graph://media/" + "ab" * 32,
        mime_type="image/png",
        size_bytes=69,
        filename="red.png",
    )
    pdf = base64.b64encode(b"%PDF-1.7 report").decode()
    blocks = [
        TextBlock(text="Say hi."),
        ImageBlock(media=stored),
        DataBlock(mime_type="application/pdf", data_base64=pdf),
    ]
    with_media = ModelRequest(messages=[Message(role="user", content=blocks)], max_tokens=2)
    text_only = ModelRequest(messages=[Message.text_message("Say hi.")], max_tokens=2)

    answered = await local.complete(with_media)
    plain = await local.complete(text_only)

    assert answered.usages is not None and plain.usages is not None
    # The placeholders ("[image (red.png, image/png, 69 bytes): not shown...]") were read.
    assert answered.usages.prompt_tokens > plain.usages.prompt_tokens + 20
