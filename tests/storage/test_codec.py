"""The shared row codec: window order, corruption reports, metadata containment."""

from __future__ import annotations

from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer._codec import decode_window_messages, window_problem
from tenxgraph.storage.checkpointer._listing import json_contains

KEY = ThreadKey("t", "u")


def rows(*seqs: int) -> list[tuple[int, str]]:
    return [(seq, Message.text_message(f"m{seq}").model_dump_json()) for seq in seqs]


def test_rows_in_any_order_come_back_in_window_order() -> None:
    window = [(4, 6), (0, 2)]
    for order in ((4, 5, 0, 1), (0, 1, 4, 5), (5, 1, 4, 0)):
        decoded = decode_window_messages(KEY, window, rows(*order))
        assert [m.text() for m in decoded] == ["m4", "m5", "m0", "m1"]


def test_a_missing_row_is_named() -> None:
    with pytest.raises(CorruptRecordError, match=r"lacks 1 of them \(seqs \[5\]\)"):
        decode_window_messages(KEY, [(4, 6)], rows(4))


@pytest.mark.parametrize(
    ("stored", "wanted", "expected"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, True),
        ({"tags": ["a", "b"]}, {"tags": ["b"]}, True),
        ({"tags": ["a", "b"]}, {"tags": "a"}, False),
        ({"tags": [{"k": 1, "j": 2}]}, {"tags": [{"k": 1}]}, True),
        ({"n": 1}, {"n": 1.0}, True),
        ({"f": True}, {"f": 1}, False),
        ({"f": 1}, {"f": True}, False),
        ({"z": None}, {"z": None}, True),
        ({"z": []}, {"z": None}, False),
        ({}, {}, True),
        ({"s": "abc"}, {"s": ["a"]}, False),  # a string is not an array of its characters
        ("abc", ["a"], False),
        ({"s": "abc"}, {"s": {"a": 1}}, False),
    ],
)
def test_containment_matches_jsonb(stored: Any, wanted: Any, expected: bool) -> None:
    assert json_contains(stored, wanted) is expected


@pytest.mark.parametrize("window", [[None], [(0, 1, 2)], [(0,)], 5, [(0, 1), None]])
def test_window_problem_names_a_window_of_another_shape(window: Any) -> None:
    """A message, never a raw unpacking error, whatever the window's shape."""
    problem = window_problem(window, 5)
    assert problem is not None and "[start, end]" in problem
