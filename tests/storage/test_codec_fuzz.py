"""Random stored data through the shared row decoder: library errors only.

Whatever a row holds (any JSON, text that is not JSON, nesting past the
recursion limit, ranges far past the log), decoding returns or raises a
``TenxGraphError`` (``CorruptRecordError`` for damage): never a raw
``KeyError``, ``TypeError``, ``ValueError``, ``RecursionError`` or
``MemoryError``. Every backend decodes through these functions.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import CorruptRecordError, TenxGraphError
from tenxgraph.storage.checkpointer._codec import (
    decode_checkpoint,
    decode_json_object,
    decode_messages,
    decode_window,
    decode_window_messages,
)
from tenxgraph.storage.checkpointer._listing import decode_thread_row, list_threads

KEY = ThreadKey("fuzzed", "alice")

WORDS = [
    "role", "content", "message_id", "type", "text", "usages", "metadata", "user",
    "assistant", "system", "tool", "tool_call", "tool_result", "image", "data", "url",
    "kind", "name", "arguments", "call_id", "status", "reasoning", "error", "0", "",
]  # fmt: skip
"""Keys and strings the models know, so random data reaches past the first check."""
BLOCK_KEYS = ["text", "url", "kind", "name", "arguments", "call_id", "status", "data"]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-3, max_value=10**12)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(WORDS)
)
json_data = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=12,
)


def message_like() -> st.SearchStrategy[Any]:
    """Dicts shaped like a stored message, with random values in random places."""
    block = st.fixed_dictionaries(
        {"type": st.sampled_from(WORDS)},
        optional={word: json_data for word in BLOCK_KEYS},
    )
    return st.fixed_dictionaries(
        {"role": st.sampled_from(WORDS) | json_data, "content": st.lists(block, max_size=3)},
        optional={"message_id": json_data, "metadata": json_data, "usages": json_data},
    )


def as_text(data: Any) -> str:
    return json.dumps(data)


stored = (
    json_data
    | json_data.map(as_text)
    | message_like().map(as_text)
    | st.text(max_size=40)
    | st.binary(max_size=20)
)
"""A column as a driver may hand it over: decoded data, JSON text, other text or bytes."""

DEEP = "[" * 100_000 + "]" * 100_000
"""Nested past Python's recursion limit."""


def library_errors_only(call: Callable[[], Any]) -> None:
    """Run ``call``; a library error is an allowed outcome, anything else fails the test."""
    with contextlib.suppress(TenxGraphError):
        call()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=stored, log_length=st.integers(min_value=-2, max_value=10**12) | json_data)
@example(window="[[0, 1000000000]]", log_length=3)
@example(window=DEEP, log_length=3)
@example(window=[[0, 10**5000]], log_length=5)
def test_windows(window: Any, log_length: Any) -> None:
    library_errors_only(lambda: decode_window(KEY, window, log_length))
    library_errors_only(lambda: decode_window(KEY, window))


@settings(max_examples=100, deadline=None)
@given(value=stored)
@example(value=DEEP)
@example(value='{"a": ' + "1" * 5000 + "}")
@example(value=b"\xff\xfe")
def test_json_objects(value: Any) -> None:
    library_errors_only(lambda: decode_json_object(KEY, "values", value))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(message_like().map(as_text) | stored.map(str), max_size=4))
@example(bodies=['{"role": "user", "content": [], "message_id": "a"}, {"role": "user"}'])
@example(bodies=[DEEP])
def test_message_rows(bodies: list[str]) -> None:
    """One message per row or an error: a row holding two messages is damage, not two rows."""
    encoded = [body.encode("utf-8", "surrogatepass") for body in bodies]
    decodes: list[Callable[[], list[Message]]] = [
        lambda: decode_messages(KEY, range(len(bodies)), bodies),
        lambda: decode_messages(KEY, range(len(encoded)), encoded),
    ]
    for decode in decodes:
        try:
            messages = decode()
        except TenxGraphError:
            continue
        assert len(messages) == len(bodies)


@settings(max_examples=100, deadline=None)
@given(
    window=st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6)).map(sorted).map(tuple), max_size=3
    ),
    seqs=st.lists(st.integers(-1, 8), max_size=8),
    body=message_like().map(as_text),
)
@example(window=[(0, 10**9)], seqs=[0, 1, 2], body='{"role": "user", "content": []}')
def test_window_rows(window: list[tuple[int, int]], seqs: list[int], body: str) -> None:
    """Rows missing, extra, repeated or out of order (windows as loading lets them through)."""
    rows = [(seq, body) for seq in seqs]
    library_errors_only(lambda: decode_window_messages(KEY, window, rows))


@settings(max_examples=100, deadline=None)
@given(version=json_data, log_length=json_data, values=stored, window=stored, created_at=json_data)
@example(version=None, log_length=1, values="{}", window="[[0,1]]", created_at=1.0)
@example(version=True, log_length=1, values="{}", window="[[0,1]]", created_at=1.0)
def test_checkpoint_rows(
    version: Any, log_length: Any, values: Any, window: Any, created_at: Any
) -> None:
    library_errors_only(
        lambda: decode_checkpoint(KEY, version, "node", 1, log_length, values, window, created_at)
    )


@pytest.mark.parametrize("parent", [-1, 2, 3, "1", 1.0])
def test_a_checkpoint_whose_parent_is_not_an_earlier_version_is_corrupt(parent: Any) -> None:
    with pytest.raises(CorruptRecordError, match="parent_version"):
        decode_checkpoint(KEY, 2, "node", 1, 1, "{}", "[[0,1]]", 1.0, parent)


listing_row = st.tuples(
    st.text(max_size=300) | json_data, json_data, json_data, stored, json_data, json_data
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(listing_row, max_size=4),
    wanted=st.none() | st.dictionaries(st.sampled_from(WORDS), json_data, max_size=2),
)
def test_listing_rows(rows: list[tuple[Any, ...]], wanted: dict[str, Any] | None) -> None:
    """A listing never raises for a damaged row: it is decoded or skipped."""
    logging.getLogger("tenxgraph.storage").disabled = True
    try:
        infos = list_threads("alice", rows, wanted)
    finally:
        logging.getLogger("tenxgraph.storage").disabled = False
    assert len(infos) <= len(rows)
    for row in rows:
        with contextlib.suppress(TenxGraphError):
            decode_thread_row("alice", row, wanted)


def test_a_listing_logs_each_skipped_row(caplog: pytest.LogCaptureFixture) -> None:
    good = ("ok", 1, 0, "{}", 1.0, 2.0)
    rows = [good, ("bad", 1, 0, DEEP, 1.0, 2.0), ("", 1, 0, "{}", 1.0, 2.0)]
    with caplog.at_level(logging.WARNING, logger="tenxgraph.storage"):
        infos = list_threads("alice", rows)
    assert [info.key.thread_id for info in infos] == ["ok"]
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert "skips thread 'bad'" in messages[0] and "not valid JSON" in messages[0]
    assert "skips thread ''" in messages[1] and "thread_id must not be empty" in messages[1]
