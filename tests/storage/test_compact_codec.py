"""Stored messages are compact JSON, and rows in the old full form still load the same.

A row leaves out every field at its default value (``"delta":false``, nulls,
empty lists), which roughly halves a typical message; loading fills the same
defaults back in. What loading could not rebuild is always written: each
block's ``type``, the message's id and timestamp, a ``None`` where the
default is something else, and a structured-output model with all its fields.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state import message as message_module
from tenxgraph.core.state.message import Message, TokenUsages, compact_json, compact_json_bytes
from tenxgraph.core.state.message_block import (
    AnnotationRef,
    ContentBlock,
    MediaRef,
    TextBlock,
    ToolResultBlock,
)
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadWrite
from tenxgraph.storage.checkpointer._codec import decode_messages, encode_write
from tenxgraph.storage.checkpointer._sqlite_rows import MESSAGE_BODY
from tests.core.state.test_roundtrip import every_block_kind

KEY = ThreadKey("t", "alice")


def full_form(message: Message) -> str:
    """A row as stores wrote it before the compact form: every field, defaults included."""
    return message.model_dump_json()


def test_every_block_kind_round_trips_in_fewer_bytes() -> None:
    messages = every_block_kind()
    rows = [compact_json(message) for message in messages]
    assert decode_messages(KEY, range(len(rows)), rows) == messages
    for message, row in zip(messages, rows, strict=True):
        assert Message.model_validate_json(row) == message
        assert len(row) < len(full_form(message))


def test_a_typical_row_leaves_out_defaults_and_keeps_what_loading_needs() -> None:
    message = Message.text_message("hello", role="assistant")
    row = json.loads(compact_json(message))
    assert row == {
        "message_id": message.message_id,
        "role": "assistant",
        "content": [{"type": "text", "text": "hello"}],
        "timestamp": message.timestamp,
    }
    assert len(compact_json(message)) < len(full_form(message)) * 0.6


def test_old_full_form_rows_load_identically_alone_and_mixed_with_new_ones() -> None:
    messages = every_block_kind() + [Message.text_message(f"m{i}") for i in range(3)]
    old = [full_form(message) for message in messages]
    new = [compact_json(message) for message in messages]
    seqs = range(len(messages))
    assert decode_messages(KEY, seqs, old) == messages
    mixed = [old[i] if i % 2 else new[i] for i in seqs]
    assert decode_messages(KEY, seqs, mixed) == messages
    assert decode_messages(KEY, seqs, [row.encode() for row in mixed]) == messages


def test_plain_text_messages_are_written_as_the_general_dump_writes_them() -> None:
    """The short cut for plain text messages makes the same text, key for key.

    Each message below differs from a plain one in one field, so every check
    of the short cut is met once with the short cut taken and once refused.
    """
    text = TextBlock(text="two")
    plain = [
        Message.text_message("hi"),
        Message.text_message("", role="assistant", message_id=7),
        Message.text_message("x", timestamp=None),
        Message.multimodal_message([TextBlock(text="one"), text], role="assistant"),
        Message(role="assistant", content=[]),
    ]
    usage = TokenUsages(completion_tokens=1, prompt_tokens=1, total_tokens=2)
    other = [
        Message.text_message("x", metadata={"k": 1}),
        Message.text_message("x", usages=usage),
        Message.text_message("x", reasoning="why"),
        Message.text_message("x", raw={"id": "r"}),
        Message.text_message("x", parsed_content={"a": 1}),
        Message.text_message("x", tools_calls=[{"id": "c"}]),
        Message.text_message("x", delta=True),
        Message.multimodal_message([TextBlock(text="a", annotations=[AnnotationRef(title="t")])]),
        Message.tool_message([ToolResultBlock(call_id="c", output="out")]),
        Subclassed.text_message("x"),
    ]
    for message in plain:
        assert message_module._plain_text_data(message) is not None
    for message in other:
        assert message_module._plain_text_data(message) is None
    for message in plain + other:
        general = to_json(message_module._compact_data(message), inf_nan_mode="null").decode()
        assert compact_json(message) == general
        assert compact_json_bytes(message) == general.encode()  # the in-memory log's form
        loaded = Message.model_validate_json(compact_json(message))
        assert loaded.model_dump() == message.model_dump()


def test_the_plain_text_short_cut_knows_every_message_field() -> None:
    """A field added to ``Message`` must be checked by the short cut, or it would be dropped.

    The short cut writes four fields and refuses a message with any of the
    others away from its default; a new field it does not know would be
    written by neither.
    """
    written = {"message_id", "role", "content", "timestamp"}
    refused = {"delta", "tools_calls", "reasoning", "metadata", "usages", "raw", "parsed_content"}
    assert set(Message.model_fields) == written | refused


class Subclassed(Message):
    """A subclass takes the general path (it may add fields)."""


def test_timestamp_and_id_are_always_written_even_at_unusual_values() -> None:
    """Their defaults are made per message: left out, they would come back different."""
    for message in (
        Message.text_message("x", timestamp=None),
        Message.text_message("x", timestamp=0.0),
        Message.text_message("x", message_id=0),
        Message.text_message("x", message_id=""),
    ):
        row = json.loads(compact_json(message))
        assert row["message_id"] == message.message_id
        assert row["timestamp"] == message.timestamp
        assert Message.model_validate_json(compact_json(message)) == message


def test_a_none_where_the_default_is_something_else_is_kept() -> None:
    usage = TokenUsages(completion_tokens=1, prompt_tokens=2, total_tokens=3, image_tokens=None)
    message = Message.text_message("x", role="assistant", usages=usage)
    row = json.loads(compact_json(message))
    assert row["usages"] == {
        "completion_tokens": 1,
        "prompt_tokens": 2,
        "total_tokens": 3,
        "image_tokens": None,
    }
    loaded = Message.model_validate_json(compact_json(message))
    assert loaded.usages is not None and loaded.usages.image_tokens is None
    assert loaded.usages.audio_tokens == 0


def test_the_usage_column_is_compact_too() -> None:
    usage = TokenUsages(completion_tokens=20, prompt_tokens=100, total_tokens=120)
    message = Message.text_message("x", role="assistant", usages=usage)
    [row] = encode_write(KEY, ThreadWrite(0, [message], {}, [(0, 1)], "n", 0)).messages
    assert row.usage is not None
    assert json.loads(row.usage) == {
        "completion_tokens": 20,
        "prompt_tokens": 100,
        "total_tokens": 120,
    }
    assert TokenUsages.model_validate_json(row.usage) == usage


def test_blocks_nested_in_a_tool_result_keep_their_type() -> None:
    nested: list[ContentBlock] = [
        TextBlock(text="a", annotations=[AnnotationRef(title="t")]),
        ToolResultBlock(call_id="inner", output=[TextBlock(text="deep")]),
    ]
    message = Message.tool_message(
        [
            ToolResultBlock(call_id="c1", output=nested),
            ToolResultBlock(call_id="c2", output=MediaRef(kind="url", url="https://x/y")),
            ToolResultBlock(call_id="c3", output={"kind": "note", "n": 1}),
            ToolResultBlock(call_id="c4", output=[]),
            ToolResultBlock(call_id="c5", output=[1, "two"]),
        ]
    )
    row = json.loads(compact_json(message))
    assert row["content"][0]["output"][1]["output"] == [{"type": "text", "text": "deep"}]
    loaded = Message.model_validate_json(compact_json(message))
    assert loaded == message
    assert isinstance(loaded.content[1], ToolResultBlock)
    assert isinstance(loaded.content[1].output, MediaRef)


class Answer(BaseModel):
    score: int = 0
    label: str


def test_a_structured_output_model_is_stored_with_all_its_fields() -> None:
    """It comes back as a dict, so fields at their model defaults must be in it."""
    message = Message(role="assistant", content=[], parsed_content=Answer(label="ok"))
    [loaded] = decode_messages(KEY, [0], [compact_json(message)])
    assert loaded.parsed_content == {"score": 0, "label": "ok"}
    assert json.loads(message.model_dump_json())["parsed_content"] == {"score": 0, "label": "ok"}


def test_every_default_made_anew_per_message_is_written() -> None:
    """A new field whose default comes from a factory other than list or dict (a clock, an id)
    must be added to what ``compact_json`` always writes; this lists them."""
    made_anew = set()
    for model in _models_in_a_message():
        for name, field in model.model_fields.items():
            factory = field.default_factory
            if factory is not None and factory not in (list, dict):
                made_anew.add((model.__name__, name))
    assert made_anew == {("Message", "message_id"), ("Message", "timestamp")}


def _models_in_a_message() -> set[type[BaseModel]]:
    found: set[type[BaseModel]] = set()
    todo: list[Any] = [Message]
    while todo:
        kind = todo.pop()
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            if kind in found or kind is BaseModel:
                continue
            found.add(kind)
            todo.extend(field.annotation for field in kind.model_fields.values())
        todo.extend(getattr(kind, "__args__", ()))
    return found


async def test_sqlite_stores_compact_rows_and_loads_old_ones(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    messages = every_block_kind()
    size = len(messages)
    checkpointer = SqliteCheckpointer(path)
    try:
        await checkpointer.asave(KEY, ThreadWrite(0, messages, {}, [(0, size)], "n", 0))
    finally:
        await checkpointer.aclose()
    with sqlite3.connect(path) as conn:
        bodies = [
            row[0] for row in conn.execute(f"SELECT {MESSAGE_BODY} FROM messages AS m ORDER BY seq")
        ]
        assert [json.loads(body) for body in bodies] == [
            json.loads(compact_json(message)) for message in messages
        ]
        for seq, message in enumerate(messages):  # rewrite each row as the old code wrote it
            conn.execute(
                "UPDATE messages SET body = ?, mid = NULL, ts = NULL WHERE seq = ?",
                (full_form(message), seq),
            )
    reader = SqliteCheckpointer(path)
    try:
        stored = await reader.aload(KEY)
    finally:
        await reader.aclose()
    assert stored is not None
    assert stored.context == messages


def test_the_plain_text_short_cut_knows_every_text_block_field() -> None:
    """The short cut writes a text block's ``type`` and ``text`` and refuses annotations."""
    assert set(TextBlock.model_fields) == {"type", "text", "annotations"}
