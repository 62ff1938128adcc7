"""Spans of the storage floor (``utils/_otel.py``): media puts and memory searches in a run's trace.

Each test sets a real SDK tracer provider for its own duration (``tests/tracing.py``).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import ScriptedModel
from tenxgraph.core.state import Message, ToolCallBlock
from tenxgraph.core.state.message_block import ImageBlock, MediaRef
from tenxgraph.storage.checkpointer.memory import InMemoryCheckpointer
from tenxgraph.storage.longterm.memory import InMemoryStore
from tenxgraph.storage.media.sqlite import SqliteMediaStore
from tenxgraph.utils._otel import CONTENT_ENV, tracer
from tests.tracing import Spans, spans_fixture  # noqa: F401 - the fixture


def _big_image() -> tuple[bytes, Message]:
    data = b"GIF89a" + os.urandom(100_000)
    block = ImageBlock(media=MediaRef(kind="data", data_base64=base64.b64encode(data).decode()))
    return data, Message.multimodal_message([block])


def test_a_media_upload_in_a_run_nests_under_the_save_that_offloads_it(
    spans: Spans, tmp_path: Path
) -> None:
    media = SqliteMediaStore(tmp_path / "media.db")
    data, message = _big_image()
    app = create_agent(ScriptedModel(["a gif"]), [], checkpointer=InMemoryCheckpointer(media=media))
    app.invoke({"messages": [message]}, {"thread_id": "m1"})

    put = spans.named("tenxgraph.media.put")[0]  # the input's; later saves find it stored
    assert put.parent is not None
    parent = next(s for s in spans.all() if s.context.span_id == put.parent.span_id)
    assert parent.name == "tenxgraph.save", spans.tree()
    assert parent.parent is not None
    assert parent.parent.span_id == spans.one("invoke_agent graph").context.span_id
    attributes = dict(put.attributes or {})
    assert attributes == {
        "tenxgraph.media.store": "SqliteMediaStore",
        "tenxgraph.media.type": "image/gif",
        "tenxgraph.media.bytes": len(data),
    }
    media.close()


def test_a_put_from_a_tool_nests_under_the_tool_and_a_failed_put_is_an_error_span(
    spans: Spans, tmp_path: Path
) -> None:
    media = SqliteMediaStore(tmp_path / "media.db")

    async def save_note(text: str) -> str:
        """Save a note as a picture."""
        try:
            await media.aput(text.encode(), "image/png")  # not a PNG: refused while staging
        except Exception as error:
            return f"not saved: {error}"
        return "saved"

    call = ToolCallBlock(id="c1", name="save_note", args={"text": "a secret note"})
    app = create_agent(ScriptedModel([call, "ok"]), [save_note])
    app.invoke({"messages": [Message.text_message("save it")]})

    put = spans.one("tenxgraph.media.put")
    assert put.parent is not None
    assert put.parent.span_id == spans.one("execute_tool save_note").context.span_id
    assert (put.attributes or {})["error.type"] == "MediaTypeError"
    assert "secret" not in repr(dict(put.attributes or {}))
    media.close()


@pytest.mark.parametrize("content", [False, True])
def test_a_memory_search_from_a_tool_nests_under_the_tool(
    spans: Spans, monkeypatch: pytest.MonkeyPatch, content: bool
) -> None:
    if content:
        monkeypatch.setenv(CONTENT_ENV, "true")
    else:
        monkeypatch.delenv(CONTENT_ENV, raising=False)
    memory = InMemoryStore()
    memory.put(("users", "ana"), "food", {"likes": "green tea"})
    memory.put(("users", "ana"), "city", {"lives": "Lisbon"})

    async def recall(topic: str) -> str:
        """Recall what we know."""
        found = await memory.asearch(("users", "ana"), query=topic, limit=5)
        return ", ".join(item.key for item in found)

    call = ToolCallBlock(id="c1", name="recall", args={"topic": "tea"})
    app = create_agent(ScriptedModel([call, "ok"]), [recall])
    app.invoke({"messages": [Message.text_message("what do I drink?")]})

    search = spans.one("tenxgraph.memory.search")
    assert search.parent is not None
    assert search.parent.span_id == spans.one("execute_tool recall").context.span_id
    attributes = dict(search.attributes or {})
    assert attributes["tenxgraph.memory.namespace"] == "users/ana"
    assert attributes["tenxgraph.memory.limit"] == 5
    assert attributes["tenxgraph.memory.results"] == 1
    assert attributes.get("tenxgraph.memory.query") == ("tea" if content else None)


def test_without_a_provider_puts_and_searches_make_no_span_and_import_nothing(
    tmp_path: Path,
) -> None:
    assert tracer() is None
    code = (
        "import sys; from tenxgraph.storage.longterm.memory import InMemoryStore; "
        "from tenxgraph.storage.media.sqlite import SqliteMediaStore; "
        "s = InMemoryStore(); s.put(('a',), 'k', {'v': 'tea'}); "
        "assert len(s.search(('a',), query='tea')) == 1; "
        f"m = SqliteMediaStore({str(tmp_path / 'm.db')!r}); m.put(b'GIF89a' + bytes(10)); "
        "m.close(); print('opentelemetry' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "False"
