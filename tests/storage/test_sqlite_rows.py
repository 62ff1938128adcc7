"""The SQLite row format (``_sqlite_rows``): what is split out comes back exactly.

A message's hex id and timestamp live in columns of their own, a checkpoint's
values are compressed and a whole-log window is left empty; every other form
stays in the JSON, and rows of the older form (a schema-5 file) read as before.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message, MessagesAdapter, TokenUsages, compact_json
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer import SqliteCheckpointer, ThreadStamp, ThreadWrite
from tenxgraph.storage.checkpointer._sqlite_rows import (
    MESSAGE_BODY,
    PACKED_COLUMNS,
    inflate_values,
    join_packed,
    message_parts,
    pack_values,
)
from tenxgraph.storage.checkpointer._sqlite_schema import MIGRATIONS

KEY = ThreadKey("rows", "alice")
HEX = "0123456789abcdef0123456789abcdef"

TIMESTAMPS = [
    1796564357.387254,
    1796564357.3872538,  # seven digits after the point
    0.5,
    123.0,
    1e20,  # an exponent
    -2.5e-300,
    None,
]
IDS = [HEX, HEX.upper(), "msg-1", 42, "0" * 31]


def awkward_messages() -> list[Message]:
    usage = TokenUsages(completion_tokens=1, prompt_tokens=2, total_tokens=3)
    return [
        Message.text_message(f"m{i}", message_id=mid, timestamp=stamp, usages=usage)
        for i, (mid, stamp) in enumerate((mid, stamp) for mid in IDS for stamp in TIMESTAMPS)
    ]


@pytest.mark.parametrize("stamp", TIMESTAMPS)
@pytest.mark.parametrize("mid", IDS)
def test_the_sql_puts_the_object_back_exactly(mid: str | int, stamp: float | None) -> None:
    message = Message.text_message("hi", message_id=mid, timestamp=stamp)
    packed_id, packed_ts, body = message_parts(message)
    assert (packed_id is not None) == (mid == HEX)
    with sqlite3.connect(":memory:") as conn:
        conn.execute("CREATE TABLE messages (mid BLOB, ts TEXT, body TEXT)")
        conn.execute("INSERT INTO messages VALUES (?, ?, ?)", (packed_id, packed_ts, body))
        (text,) = conn.execute(f"SELECT {MESSAGE_BODY} FROM messages AS m").fetchone()
    assert json.loads(text) == json.loads(compact_json(message))
    assert Message.model_validate_json(text) == message


async def test_awkward_ids_and_timestamps_round_trip_through_the_checkpointer(
    tmp_path: Path,
) -> None:
    messages = awkward_messages()
    checkpointer = SqliteCheckpointer(tmp_path / "t.db")
    try:
        write = ThreadWrite(0, messages, {}, [(0, len(messages))], node="n", step=0)
        await checkpointer.asave(KEY, write)
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.context == messages
        page = await checkpointer.alist_messages(KEY, offset=3, limit=5)
        assert [m.message for m in page] == messages[3:8]
    finally:
        await checkpointer.aclose()
    with sqlite3.connect(tmp_path / "t.db") as conn:
        split = conn.execute("SELECT count(*) FROM messages WHERE mid IS NOT NULL").fetchone()
        stamped = conn.execute("SELECT count(*) FROM messages WHERE ts IS NOT NULL").fetchone()
    assert split == (len(TIMESTAMPS),)  # the one lowercase hex id
    assert stamped == (len(IDS) * (len(TIMESTAMPS) - 1),)  # all but None


def test_values_compress_only_when_they_shrink() -> None:
    typical = (
        '{"context_summary":null,"app_state":{},"structured_response":null,"execution_meta":'
        '{"current_node":"answer","step":1,"status":"completed","turn_start":998}}'
    )
    packed = pack_values(typical)
    assert isinstance(packed, bytes) and len(packed) < 30
    assert inflate_values(KEY, packed) == typical.encode()
    assert pack_values("{}") == "{}"  # would grow
    large = json.dumps({"x": "y" * 20_000})
    assert pack_values(large) == large  # over the bound: kept as text


@pytest.mark.parametrize(
    "blob", [b"\x02abc", b"\x01not deflate", bytes(pack_values('{"a": 1}' * 10))[:-2]]
)
async def test_a_damaged_values_blob_is_corrupt(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "t.db"
    checkpointer = SqliteCheckpointer(path)
    try:
        await checkpointer.asave(
            KEY, ThreadWrite(0, [Message.text_message("a")], {"a": 1}, [(0, 1)], node="n", step=0)
        )
        with sqlite3.connect(path) as conn:
            conn.execute('UPDATE checkpoints SET "values" = ?', (blob,))
        with pytest.raises(CorruptRecordError, match="'checkpoint values'"):
            await checkpointer.alist_checkpoints(KEY)
        with pytest.raises(CorruptRecordError, match="'rows'"):
            await checkpointer.aget_checkpoint(KEY, 1)
    finally:
        await checkpointer.aclose()


async def test_checkpoints_store_compact_rows_and_rewind_restores_plain_ones(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    checkpointer = SqliteCheckpointer(path)
    values = {"context_summary": None, "app_state": {}, "structured_response": None}
    try:
        stamp = ThreadStamp("", 0)
        for turn in range(3):
            write = ThreadWrite(
                stamp.version,
                [Message.text_message(f"q{turn}")],
                {**values, "turn": turn},
                [(0, turn + 1)],
                node="n",
                step=turn,
            )
            write.expected_incarnation = stamp.incarnation or None
            stamp = await checkpointer.asave(KEY, write)
        with sqlite3.connect(path) as conn:
            rows = conn.execute('SELECT "values", "window" FROM checkpoints').fetchall()
        assert all(isinstance(v, bytes) and w == "" for v, w in rows)
        listed = await checkpointer.alist_checkpoints(KEY)
        assert [(c.values["turn"], c.window) for c in listed] == [
            (2, [(0, 3)]),
            (1, [(0, 2)]),
            (0, [(0, 1)]),
        ]
        stamp = await checkpointer.arewind(KEY, stamp, 2)
        assert stamp is not None
        with sqlite3.connect(path) as conn:
            row = conn.execute('SELECT "values", "window" FROM threads').fetchone()
        assert json.loads(row[0])["turn"] == 1 and row[1] == "[[0,2]]"
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.values["turn"] == 1
        assert [m.text() for m in stored.context] == ["q0", "q1"]
        newest = (await checkpointer.alist_checkpoints(KEY, limit=1))[0]
        assert (newest.node, newest.values["turn"], newest.window) == ("__rollback__", 1, [(0, 2)])
    finally:
        await checkpointer.aclose()


async def test_a_schema_5_file_reads_back_exactly_and_takes_new_turns(tmp_path: Path) -> None:
    """A file as the code before migration 6 wrote it: whole bodies, values and windows as text."""
    path = tmp_path / "old.db"
    log = [
        Message.text_message("q"),
        Message.text_message(
            "a",
            role="assistant",
            usages=TokenUsages(completion_tokens=1, prompt_tokens=2, total_tokens=3),
        ),
    ]
    with sqlite3.connect(path) as conn:
        for migration in MIGRATIONS[:5]:
            for statement in migration:
                conn.execute(statement)
        conn.execute(
            "CREATE TABLE schema_versions (component TEXT NOT NULL, version INTEGER NOT NULL, "
            "applied_at REAL NOT NULL, PRIMARY KEY (component, version))"
        )
        conn.executemany(
            "INSERT INTO schema_versions VALUES ('threads', ?, 0)", [(v,) for v in range(1, 6)]
        )
        conn.execute(
            "INSERT INTO threads (id, user_id, thread_id, incarnation, version, log_length, "
            '"values", "window", metadata, created_at, updated_at) '
            "VALUES (1, ?, ?, 'inc', 2, 2, '{\"turn\":2}', '[[0,2]]', '{}', 1.0, 2.0)",
            (KEY.user_id, KEY.thread_id),
        )
        for seq, message in enumerate(log):
            conn.execute(
                "INSERT INTO messages (tid, seq, body) VALUES (1, ?, ?)",
                (seq, compact_json(message)),
            )
            conn.execute(
                "INSERT INTO checkpoints VALUES (1, ?, 'n', ?, ?, ?, ?, ?, NULL)",
                (seq + 1, seq, seq + 1, json.dumps({"turn": seq + 1}), f"[[0,{seq + 1}]]", 1.5),
            )
    checkpointer = SqliteCheckpointer(path)
    try:
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.context == log and stored.values == {"turn": 2}
        assert [m.message for m in await checkpointer.alist_messages(KEY)] == log
        listed = await checkpointer.alist_checkpoints(KEY)
        assert [(c.version, c.values, c.window) for c in listed] == [
            (2, {"turn": 2}, [(0, 2)]),
            (1, {"turn": 1}, [(0, 1)]),
        ]
        more = [Message.text_message("after")]
        write = ThreadWrite(2, more, {"turn": 3}, [(0, 3)], node="n", step=3)
        write.expected_incarnation = "inc"
        await checkpointer.asave(KEY, write)
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.context == [*log, *more]
        rewound = await checkpointer.arewind(KEY, ThreadStamp("inc", 3), 1)
        assert rewound == ("inc", 4)
        stored = await checkpointer.aload(KEY)
        assert stored is not None and stored.context == log[:1] and stored.values == {"turn": 1}
    finally:
        await checkpointer.aclose()


def _packed_and_joined(rows: list[tuple[bytes | None, str | None, str]]) -> tuple[str | None, str]:
    with sqlite3.connect(":memory:") as conn:
        conn.execute(
            "CREATE TABLE messages (seq INTEGER PRIMARY KEY, mid BLOB, ts TEXT, body TEXT)"
        )
        conn.executemany("INSERT INTO messages (mid, ts, body) VALUES (?, ?, ?)", rows)
        packed = conn.execute(f"SELECT {PACKED_COLUMNS} FROM messages AS m").fetchone()
        (joined,) = conn.execute(
            f"SELECT group_concat({MESSAGE_BODY}) FROM messages AS m"
        ).fetchone()
    return join_packed(*packed), joined


def test_the_packed_read_joins_the_rows_as_the_sql_does() -> None:
    messages = [m for m in awkward_messages() if message_parts(m)[0] and message_parts(m)[1]]
    assert len(messages) > 1
    packed, joined = _packed_and_joined([message_parts(m) for m in messages])
    assert packed == joined
    assert MessagesAdapter.validate_json(f"[{packed}]") == messages


@pytest.mark.parametrize(
    "damage",
    [
        lambda mid, ts, body: (None, ts, body),  # an id kept in the body
        lambda mid, ts, body: (mid, None, body),  # a timestamp kept in the body
        lambda mid, ts, body: (mid[:15], ts, body),  # a short id
        lambda mid, ts, body: (mid, ts + ",1", body),  # a timestamp that would split in two
        lambda mid, ts, body: (mid, ts, body.replace("m1", "m1\x1e")),  # the separator
    ],
)
def test_rows_the_packed_read_cannot_join_are_left_to_the_sql(damage: object) -> None:
    rows = [message_parts(Message.text_message(f"m{i}", message_id=HEX)) for i in range(3)]
    rows[1] = damage(*rows[1])  # type: ignore[operator]
    packed, _ = _packed_and_joined(rows)  # type: ignore[arg-type]
    assert packed is None


def test_an_empty_packed_read_is_empty() -> None:
    assert join_packed(0, None, None, None, None) == ""


def test_values_pack_as_a_fresh_compressor_with_the_dictionary_would() -> None:
    from tenxgraph.storage.checkpointer._sqlite_rows import _VALUES_DICTIONARY

    text = '{"context_summary":null,"app_state":{},"execution_meta":{"step":3}}'
    deflate = zlib.compressobj(6, zlib.DEFLATED, -10, 1, zlib.Z_FILTERED, _VALUES_DICTIONARY)
    assert pack_values(text) == b"\x01" + deflate.compress(text.encode()) + deflate.flush()
    assert pack_values(text) == pack_values(text)  # the primed compressor is left as it was
