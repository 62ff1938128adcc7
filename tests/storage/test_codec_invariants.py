"""The row codec at its edges: an empty thread, window bounds, identities, the errors users read.

Written against the mutants ``make mutation`` found surviving (tests/README.md).
The backend tests run on every backend of the conformance suite; the rest
call the codec as each backend does.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message, compact_json
from tenxgraph.errors import ConflictError, CorruptRecordError, StateError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadWrite
from tenxgraph.storage.checkpointer._codec import (
    EncodedWrite,
    MessageRow,
    check_stop_request,
    check_window,
    conflict,
    decode_checkpoint,
    decode_joined_thread,
    decode_json_object,
    decode_message_page,
    decode_messages,
    decode_thread,
    decode_version,
    decode_window,
    decode_window_messages,
    encode_write,
    lease_lost,
    missing_checkpoint,
    parent_of,
    rewind_conflict,
    stamp_of,
    thread_not_found,
    window_problem,
    window_reach,
    window_seqs,
    window_size,
)
from tenxgraph.storage.checkpointer.base import ThreadStamp
from tenxgraph.storage.checkpointer.state_codec import values_text

KEY = ThreadKey("t", "u")
WHERE = "thread 't' (user 'u')"


def body(seq: int) -> str:
    message = Message.text_message(f"m{seq}", message_id=f"id{seq}", timestamp=1.5)
    return compact_json(message)


def write(version: int = 0, **fields: Any) -> ThreadWrite:
    messages, values = fields.pop("messages", []), fields.pop("values", {})
    return ThreadWrite(version, messages, values, [], "n", 0, **fields)


# --- an empty thread, on every backend ----------------------------------------------------


async def test_a_thread_saved_with_no_messages_loads(checkpointer: Checkpointer) -> None:
    stamp = await checkpointer.asave(KEY, write())
    for _ in range(2):  # the second load is served by a cache where there is one
        stored = await checkpointer.aload(KEY)
        assert stored is not None
        assert (stored.log_length, stored.window, stored.context) == (0, [], [])
        assert stored.stamp == stamp
    checkpoint = await checkpointer.aget_checkpoint(KEY, 1)
    assert checkpoint is not None
    assert (checkpoint.log_length, checkpoint.window, checkpoint.parent_version) == (0, [], None)
    second = ThreadWrite(1, [Message.text_message("hi")], {}, [(0, 1)], "n", 1)
    second.expected_incarnation = stamp.incarnation
    await checkpointer.asave(KEY, second)
    stored = await checkpointer.aload(KEY)
    assert stored is not None and [m.text() for m in stored.context] == ["hi"]


@pytest.mark.parametrize("incarnation", ["", None, 12345])
async def test_a_later_save_needs_the_threads_incarnation_as_a_string(
    checkpointer: Checkpointer, incarnation: Any
) -> None:
    stamp = await checkpointer.asave(KEY, write())
    with pytest.raises(
        StateError,
        match=re.escape(
            "thread 't': a write with expected_version 1 needs expected_incarnation, the "
            "thread's identity (StoredThread.incarnation, or the stamp the last save "
            f"returned); got {incarnation!r}"
        ),
    ):
        await checkpointer.asave(KEY, write(1, expected_incarnation=incarnation))
    assert await checkpointer.aversion(KEY) == stamp  # nothing was written


async def test_a_creating_save_refuses_an_incarnation(checkpointer: Checkpointer) -> None:
    with pytest.raises(
        StateError,
        match=re.escape(
            "thread 't': a write with expected_version 0 creates the thread and makes its "
            "incarnation; expected_incarnation must be None, got 'abc'"
        ),
    ):
        await checkpointer.asave(KEY, write(0, expected_incarnation="abc"))
    assert await checkpointer.aload(KEY) is None
    await checkpointer.asave(KEY, write(0, expected_incarnation=""))  # "" is as good as None


# --- encode_write -------------------------------------------------------------------------


def test_encode_write_refuses_bad_writes_before_any_transaction() -> None:
    with pytest.raises(StateError, match=r"^expected_version must be >= 0, got -1$"):
        encode_write(KEY, write(-1))
    with pytest.raises(
        StateError, match=r"^thread 't': new_messages\[1\] is a dict, not a Message$"
    ):
        encode_write(KEY, write(messages=[Message.text_message("a"), {"role": "user"}]))
    chunk = Message.text_message("part", role="assistant", delta=True)
    with pytest.raises(
        StateError,
        match=r"^thread 't': new_messages\[0\] is a streaming delta; "
        r"only complete messages are stored$",
    ):
        encode_write(KEY, write(messages=[chunk]))


def test_encode_write_makes_one_row_per_message_and_a_new_incarnation() -> None:
    first, second = Message.text_message("a", message_id=7), Message.text_message("b")
    encoded = encode_write(KEY, write(messages=[first, second], metadata={"k": 1}))
    assert [(r.message_id, r.role, r.usage) for r in encoded.messages] == [
        ("7", "user", None),
        (str(second.message_id), "user", None),
    ]
    assert Message.model_validate_json(encoded.messages[0].body) == first
    assert re.fullmatch(r"[0-9a-f]{16}", encoded.incarnation)
    assert encode_write(KEY, write()).incarnation != encoded.incarnation
    assert (encoded.metadata, encoded.parent) == ('{"k":1}', None)
    assert encode_write(KEY, write()).metadata is None


def test_the_usage_column_is_written_only_when_asked() -> None:
    from tenxgraph.core.state.message import TokenUsages

    usages = TokenUsages(completion_tokens=2, prompt_tokens=3, total_tokens=5)
    message = Message.text_message("a", role="assistant", usages=usages)
    [row] = encode_write(KEY, write(messages=[message])).messages
    assert row.usage is not None and TokenUsages.model_validate_json(row.usage) == usages
    [bare] = encode_write(KEY, write(messages=[message]), usages=False).messages
    assert bare.usage is None


def test_a_values_text_from_the_runtime_is_stored_as_it_is() -> None:
    text = values_text({"context_summary": "so far"}, "AgentState")
    encoded = encode_write(KEY, write(1, expected_incarnation="i", values=text))
    assert encoded.values == str(text) and type(encoded.values) is str
    assert encode_write(KEY, write(values={"a": 1})).values == '{"a":1}'


def test_a_message_that_cannot_be_dumped_is_named_in_a_state_error() -> None:
    def refuse(message: Message) -> str:
        raise ValueError("no JSON for this")

    message = Message.text_message("hi", message_id="m-1")
    with pytest.raises(
        StateError, match=re.escape("message 'm-1' cannot be stored as JSON: no JSON for this")
    ):
        encode_write(KEY, write(messages=[message]), dump=refuse)


@pytest.mark.parametrize(("parent", "stored"), [(None, None), (3, None), (0, 0), (1, 1), (2, 2)])
def test_a_branch_records_its_parent(parent: int | None, stored: int | None) -> None:
    branch = write(3, expected_incarnation="i", parent_version=parent)
    assert encode_write(KEY, branch).parent == stored


@pytest.mark.parametrize("parent", [4, -1, True, 1.0])
def test_a_parent_must_be_an_earlier_checkpoint(parent: Any) -> None:
    with pytest.raises(
        StateError,
        match=re.escape(
            "thread 't': parent_version must be an earlier checkpoint's version (0 to 3), "
            f"got {parent!r}"
        ),
    ):
        encode_write(KEY, write(3, expected_incarnation="i", parent_version=parent))


def test_parent_of_reads_the_stored_column() -> None:
    assert [parent_of(KEY, v, None) for v in (1, 2, 5)] == [None, 1, 4]
    assert (parent_of(KEY, 5, 0), parent_of(KEY, 5, 2)) == (None, 2)
    for damaged in (5, -1, "2"):
        with pytest.raises(
            CorruptRecordError,
            match=rf"^{re.escape(WHERE)}: column 'parent_version' holds {damaged!r}, expected an "
            "earlier version$",
        ):
            parent_of(KEY, 5, damaged)


# --- the errors a backend raises ---------------------------------------------------------


def test_conflicts_say_whether_the_thread_was_re_created() -> None:
    later = write(2, expected_incarnation="old")
    moved = conflict(KEY, later, "old", ThreadStamp("old", 3))
    assert (moved.expected, moved.actual, moved.recreated) == (2, 3, False)
    assert str(moved) == "thread 't' was changed by another run (expected version 2, found 3)"
    recreated = conflict(KEY, later, "old", ThreadStamp("new", 1))
    assert (recreated.actual, recreated.recreated) == (1, True)
    gone = conflict(KEY, later, "old", None)
    assert (gone.actual, gone.recreated) == (None, False)
    first = conflict(KEY, write(0), "fresh", ThreadStamp("other", 1))
    assert (first.expected, first.actual, first.recreated) == (0, 1, False)
    assert isinstance(first, ConflictError)


def test_rewind_conflicts_compare_the_whole_stamp() -> None:
    stamp = ThreadStamp("i", 4)
    assert not rewind_conflict(KEY, stamp, ThreadStamp("i", 5)).recreated
    assert rewind_conflict(KEY, stamp, ThreadStamp("j", 4)).recreated
    assert str(rewind_conflict(KEY, stamp, ThreadStamp("i", 5))).startswith("thread 't' was")
    gone = rewind_conflict(KEY, stamp, None)
    assert (gone.expected, gone.actual, gone.recreated) == (4, None, False)


def test_the_messages_of_lease_rewind_and_lookup_errors() -> None:
    assert str(lease_lost(KEY, "run-1/x")) == (
        "thread 't' is busy: another run holds it: this run's lease (run-1/x) expired and "
        "another run took the thread, or it was released; nothing was written"
    )
    assert str(missing_checkpoint(KEY, 3)) == (
        "thread 't' has no checkpoint 3 (keep_checkpoints dropped it, or the thread never "
        "reached it), so it cannot be rewound to it"
    )
    assert str(thread_not_found(KEY)) == "thread 't' does not exist for user 'u'"
    with pytest.raises(
        StateError,
        match=re.escape("a stop request must be one of ['interrupt', 'rollback'], got 'halt'"),
    ):
        check_stop_request("halt")
    check_stop_request("rollback")
    check_stop_request("interrupt")


# --- windows ------------------------------------------------------------------------------


def test_window_helpers() -> None:
    window = [(5, 7), (0, 2), (3, 3)]
    assert window_seqs(window) == [5, 6, 0, 1]
    assert window_size(window) == 4
    assert window_reach(KEY, window) == 7
    assert window_reach(KEY, []) == 0
    with pytest.raises(StateError, match=r"^thread 't': window\[0\] = \(3, 1\) is not a range"):
        window_reach(KEY, [(3, 1)])
    with pytest.raises(StateError, match=r"window ranges \(0, 3\) and \(2, 4\) overlap"):
        window_reach(KEY, [(2, 4), (0, 3)])


@pytest.mark.parametrize(
    ("window", "log_length"),
    [([], 0), ([(0, 0)], 0), ([(0, 3)], 3), ([(3, 5), (0, 3)], 5), ([(2, 2), (0, 4)], 4)],
)
def test_windows_within_the_log_are_accepted(window: Any, log_length: int) -> None:
    assert window_problem(window, log_length) is None
    assert window_problem(window, None) is None


@pytest.mark.parametrize(
    ("window", "log_length", "problem"),
    [
        ([(0, 4)], 3, "window[0] = (0, 4) is not a range of the log (0 <= start <= end <= 3)"),
        ([(-1, 2)], 3, "window[0] = (-1, 2) is not a range of the log (0 <= start <= end <= 3)"),
        ([(2, 1)], None, "window[0] = (2, 1) is not a range of the log (0 <= start <= end <= end)"),
        ([(True, 1)], 3, "window[0] = (True, 1) is not a range of the log"),
        ([(0, 1.0)], 3, "window[0] = (0, 1.0) is not a range of the log"),
        ([(0, 1), (1, 9)], 3, "window[1] = (1, 9) is not a range of the log"),
        ([(0, 1), ("0", 1)], 3, "window[1] = ('0', 1) is not a range of the log"),
        (
            [(0, 3), (2, 5)],
            5,
            "window ranges (0, 3) and (2, 5) overlap: a log entry can be in the context only once",
        ),
        ([(1, 2), (1, 2)], 5, "window ranges (1, 2) and (1, 2) overlap"),
        ((0, 1), 3, "window[0] = 0 is not a [start, end] range"),
        ("01", 3, "the window is '01', not a list of [start, end] ranges"),
    ],
)
def test_window_problems_are_named(window: Any, log_length: int | None, problem: str) -> None:
    found = window_problem(window, log_length)
    assert found is not None and found.startswith(problem), found


class _Int(int):
    """An int that is not a plain ``int``: the one-range short cut must refuse it."""


_ENDS: list[Any] = [-1, 0, 1, 2, 3, 4, True, False, 1.0, "1", None, _Int(1)]


@pytest.mark.parametrize("log_length", [0, 1, 3])
def test_check_window_of_one_range_agrees_with_the_whole_rule(log_length: int) -> None:
    """``check_window``'s one-range short cut passes exactly what ``window_problem`` passes."""
    shapes: list[Any] = [[(start, end)] for start in _ENDS for end in _ENDS] + [
        [[0, 1]],
        [(0, 1, 2)],
        [(0,)],
        ((0, 1),),
        [(0, 1), (1, 1)],
        [],
    ]
    for window in shapes:
        problem = window_problem(window, log_length)
        if problem is None:
            check_window(KEY, window, log_length)
        else:
            with pytest.raises(StateError, match=re.escape(problem)):
                check_window(KEY, window, log_length)


def test_the_rows_and_the_write_are_the_named_tuples_backends_read() -> None:
    """``encode_write`` builds its tuples without their classes' ``__new__``: still theirs."""
    message = Message.text_message("a", message_id="m1")
    encoded = encode_write(KEY, write(2, expected_incarnation=_Str("inc"), messages=[message]))
    assert type(encoded) is EncodedWrite and type(encoded.messages[0]) is MessageRow
    assert encoded._asdict() == {
        "messages": encoded.messages,
        "values": "{}",
        "window": "[]",
        "metadata": None,
        "incarnation": "inc",
        "parent": None,
    }
    assert encoded.messages[0]._asdict() == {
        "message_id": "m1",
        "role": "user",
        "usage": None,
        "body": compact_json(message),
    }
    for incarnation in (None, "", 5):
        with pytest.raises(StateError, match="needs expected_incarnation"):
            encode_write(KEY, write(2, expected_incarnation=incarnation))


class _Str(str):
    """A str subclass: an incarnation given as one is kept (any str is an identity)."""


def test_decode_window_checks_the_log_length_and_the_shape() -> None:
    assert decode_window(KEY, "[[0, 2], [3, 4]]", 4) == [(0, 2), (3, 4)]
    assert decode_window(KEY, [[0, 2]], 2) == [(0, 2)]  # a driver already decoded it
    assert decode_window(KEY, "[]", 0) == []
    assert decode_window(KEY, "[[0, 9]]") == [(0, 9)]  # no log length: the shape only
    for bad in (-1, "3", None.__class__, 2.0):
        with pytest.raises(
            CorruptRecordError, match=rf"^{re.escape(WHERE)}: the log length .* is not a count"
        ):
            decode_window(KEY, "[]", bad)
    with pytest.raises(
        CorruptRecordError,
        match=rf"^{re.escape(WHERE)}: column 'window' is not a list of \[start, end\] seq "
        r"ranges: '\[\[0, 1, 2\]\]'$",
    ):
        decode_window(KEY, "[[0, 1, 2]]", 3)
    with pytest.raises(
        CorruptRecordError, match=r"column 'window' is not a list of \[start, end\] seq ranges"
    ):
        decode_window(KEY, '{"a": 1}', 3)
    with pytest.raises(
        CorruptRecordError,
        match=rf"^{re.escape(WHERE)}: column 'checkpoint window' is corrupt: window\[0\] = "
        r"\(0, 1000000000\) is not a range of the log \(0 <= start <= end <= 3\)$",
    ):
        decode_window(KEY, "[[0, 1000000000]]", 3, "checkpoint window")
    with pytest.raises(
        CorruptRecordError, match=rf"^{re.escape(WHERE)}: column 'window' is not valid JSON: "
    ):
        decode_window(KEY, "[[0,", 3)


def test_a_checkpoint_row_decodes_with_its_window_checked() -> None:
    checkpoint = decode_checkpoint(KEY, 4, "node", 2, 3, '{"a": 1}', "[[0, 3]]", 1.5, None)
    assert (checkpoint.version, checkpoint.node, checkpoint.step) == (4, "node", 2)
    assert (checkpoint.log_length, checkpoint.values, checkpoint.window) == (3, {"a": 1}, [(0, 3)])
    assert (checkpoint.created_at, checkpoint.parent_version) == (1.5, 3)
    assert decode_checkpoint(KEY, 4, "n", 0, 0, "{}", "[]", 0.0, 0).parent_version is None
    with pytest.raises(CorruptRecordError, match="column 'checkpoint window' is corrupt"):
        decode_checkpoint(KEY, 4, "n", 0, 2, "{}", "[[0, 3]]", 0.0)
    with pytest.raises(CorruptRecordError, match="column 'checkpoint values' holds a list"):
        decode_checkpoint(KEY, 4, "n", 0, 0, "[]", "[]", 0.0)


# --- rows -------------------------------------------------------------------------------------


def test_a_window_with_more_rows_than_seqs_is_corrupt() -> None:
    rows = [(0, body(0)), (1, body(1)), (2, body(2))]
    with pytest.raises(
        CorruptRecordError,
        match=rf"^{re.escape(WHERE)}: the window \[\(0, 2\)\] names 2 messages but the log "
        r"returned 3 rows for it$",
    ):
        decode_window_messages(KEY, [(0, 2)], rows)


def test_missing_rows_are_counted_and_named() -> None:
    with pytest.raises(
        CorruptRecordError,
        match=r"the window \[\(0, 4\)\] names 4 messages but the log lacks 3 of them "
        r"\(seqs \[0, 2, 3\]\)$",
    ):
        decode_window_messages(KEY, [(0, 4)], [(1, body(1)), (9, body(9))])
    huge = [(0, 10**9)]
    with pytest.raises(CorruptRecordError, match=r"lacks 999999999 of them \(seqs \[1, 2, "):
        decode_window_messages(KEY, huge, [(0, body(0))])  # stops after ten, never lists 10**9


def test_rows_decode_from_text_or_bytes_and_a_bad_row_is_named() -> None:
    assert [m.text() for m in decode_messages(KEY, [0, 1], [body(0), body(1)])] == ["m0", "m1"]
    as_bytes = [body(0).encode(), body(1).encode()]
    assert [m.text() for m in decode_messages(KEY, [0, 1], as_bytes)] == ["m0", "m1"]
    assert decode_messages(KEY, [], []) == []
    with pytest.raises(
        CorruptRecordError,
        match=rf"^{re.escape(WHERE)}: message seq 8 is corrupt at field 'role': ",
    ):
        decode_messages(KEY, [7, 8], [body(7), body(8).replace('"user"', '"nobody"')])
    with pytest.raises(CorruptRecordError, match=r"message seq 3 is corrupt at field 'body'"):
        decode_messages(KEY, [3], [f"{body(1)},{body(2)}"])  # one row holding two messages
    page = decode_message_page(KEY, [(4, body(4)), (2, body(2))])
    assert [(s.seq, s.message.text()) for s in page] == [(4, "m4"), (2, "m2")]


def test_a_loaded_thread_reports_the_size_of_its_context_rows() -> None:
    rows = [(0, body(0)), (1, body(1))]
    row = (2, 2, '{"x": 1}', None, '{"tag": "a"}', "inc")
    stored = decode_thread(KEY, row, [(0, 2)], rows)
    assert stored.context_chars == len(rows[0][1]) + len(rows[1][1])
    assert (stored.version, stored.log_length, stored.incarnation) == (2, 2, "inc")
    assert (stored.values, stored.metadata) == ({"x": 1}, {"tag": "a"})
    assert [m.text() for m in stored.context] == ["m0", "m1"]
    assert (stored.key, stored.window) == (KEY, [(0, 2)])
    assert decode_thread(KEY, (1, 0, "{}", None, "{}", "i"), [], []).context_chars == 0
    for column, damaged in (
        ("version", ("x", 0, "{}", None, "{}", "i")),
        ("values", (1, 0, "{oops", None, "{}", "i")),
        ("metadata", (1, 0, "{}", None, "[1]", "i")),
    ):
        with pytest.raises(CorruptRecordError, match=rf"^{re.escape(WHERE)}: column '{column}' "):
            decode_thread(KEY, damaged, [], [])


def test_a_joined_window_loads_as_its_rows_do_and_anything_short_is_left_to_them() -> None:
    """The one-call decode gives the row-by-row thread, size included; None sends a load there."""
    rows = [(0, body(0)), (1, body(1)), (2, body(2))]
    row = (3, 3, '{"x": 1}', None, '{"tag": "a"}', "inc")
    joined = ",".join(text for _, text in rows)
    assert decode_joined_thread(KEY, row, [(0, 3)], 3, joined) == decode_thread(
        KEY, row, [(0, 3)], rows
    )
    empty = (1, 0, "{}", None, "{}", "i")
    assert decode_joined_thread(KEY, empty, [], 0, None) == decode_thread(KEY, empty, [], [])
    assert decode_joined_thread(KEY, row, [(0, 3)], 2, joined) is None  # a row missing
    assert decode_joined_thread(KEY, empty, [], 1, None) is None  # a count not the window's
    assert decode_joined_thread(KEY, row, [(0, 3)], 3, None) is None
    assert decode_joined_thread(KEY, row, [(0, 2)], 2, joined) is None  # a row holding two
    damaged = joined.replace('"user"', '"nobody"', 1)
    assert decode_joined_thread(KEY, row, [(0, 3)], 3, damaged) is None
    with pytest.raises(CorruptRecordError, match="values"):
        decode_joined_thread(KEY, (3, 3, "{oops", None, "{}", "i"), [(0, 3)], 3, joined)


@pytest.mark.parametrize(
    ("stored", "shown"),
    [(0, "0"), (True, "True"), ("1", "'1'"), (None, "None"), (-(10**5000), "<int>")],
    ids=["zero", "bool", "text", "null", "huge"],
)
def test_a_bad_version_is_corrupt_and_shown_safely(stored: Any, shown: str) -> None:
    with pytest.raises(
        CorruptRecordError,
        match=rf"^{re.escape(WHERE)}: column 'version' holds {re.escape(shown)}, "
        r"expected an int >= 1$",
    ):
        decode_version(KEY, stored)
    assert decode_version(KEY, 1) == 1


def test_a_long_stored_value_is_shown_shortened() -> None:
    with pytest.raises(CorruptRecordError) as caught:
        decode_version(KEY, "x" * 500)
    shown = str(caught.value).split("holds ")[1].split(", expected")[0]
    assert shown == "'" + "x" * 76 + "..." and len(shown) == 80


def test_stamps_and_json_objects() -> None:
    assert stamp_of(KEY, None) is None
    assert stamp_of(KEY, (123, 4)) == ThreadStamp("123", 4)
    assert decode_json_object(KEY, "values", '{"a": [1]}') == {"a": [1]}
    assert decode_json_object(KEY, "values", {"a": 1}) == {"a": 1}
    with pytest.raises(
        CorruptRecordError,
        match=rf"^{re.escape(WHERE)}: column 'metadata' holds a list, expected a JSON object$",
    ):
        decode_json_object(KEY, "metadata", "[1]")
    with pytest.raises(CorruptRecordError, match="column 'values' is not valid JSON"):
        decode_json_object(KEY, "values", "[" * 100_000 + "]" * 100_000)


def test_a_window_s_missing_rows_name_ten_seqs_and_count_only_rows_inside_it() -> None:
    with pytest.raises(
        CorruptRecordError,
        match=r"names 20 messages but the log lacks 19 of them \(seqs \[1, 2, 3, 4, 5, 6, 7, 8, "
        r"9, 10\]\)$",
    ):
        decode_window_messages(KEY, [(0, 20)], [(0, body(0)), (20, body(20))])
    with pytest.raises(CorruptRecordError, match=r"names 2 messages but the log lacks 2 of them"):
        decode_window_messages(KEY, [(0, 2)], [(2, body(2)), (5, body(5))])


def test_rows_in_another_order_with_a_bad_one_name_the_thread_and_its_seq() -> None:
    rows = [(1, body(1)), (0, '{"role": 5}')]
    with pytest.raises(CorruptRecordError, match=rf"^{re.escape(WHERE)}: message seq 0 is corrupt"):
        decode_window_messages(KEY, [(0, 2)], rows)
    in_order = decode_window_messages(KEY, [(0, 2)], [(1, body(1)), (0, body(0))])
    assert [m.text() for m in in_order] == ["m0", "m1"]


def test_a_bad_log_length_or_window_column_is_shown_in_the_error_up_to_its_limit() -> None:
    length = "x" * 78  # its repr is 80 characters, the limit: shown whole
    with pytest.raises(CorruptRecordError) as raised:
        decode_window(KEY, "[]", length)
    assert str(raised.value) == f"{WHERE}: the log length {length!r} is not a count of messages"
    stored = '"' + "y" * 197 + '"'  # its repr is 201 characters: cut at 200
    with pytest.raises(CorruptRecordError) as raised:
        decode_window(KEY, stored)
    shown = repr(stored)[:197] + "..."
    assert str(raised.value) == (
        f"{WHERE}: column 'window' is not a list of [start, end] seq ranges: {shown}"
    )


def test_a_bad_window_s_parts_are_shown_up_to_thirty_characters() -> None:
    cut = "'" + "w" * 26 + "..."  # a repr of 31 characters, cut at 30
    assert window_problem("w" * 29, None) == (
        f"the window is {cut}, not a list of [start, end] ranges"
    )
    assert window_problem([["w" * 27]], None) == (
        "window[0] = ['" + "w" * 25 + "... is not a [start, end] range"
    )
    problem = window_problem([["w" * 29, "w" * 29]], None)
    assert problem is not None
    assert problem.startswith(f"window[0] = ({cut}, {cut}) is not a ")
