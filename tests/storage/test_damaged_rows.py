"""Damaged rows behave the same on every backend.

A thread listing leaves a damaged row out and logs a warning naming the
thread (one bad thread never hides a tenant's others); loading a damaged
thread raises ``CorruptRecordError`` naming it. A stored window is checked
against the log before any seq is listed, so ``[[0, 10**9]]`` is a clear
error, not a ``MemoryError``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import CorruptRecordError, StateError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadWrite
from tenxgraph.testing._checkpointer_base import save
from tests.storage._damage import Damage
from tests.storage.conftest import MakeCheckpointer

USER = "alice"


@pytest.fixture
def checkpointer(make_checkpointer: MakeCheckpointer) -> Checkpointer:
    return make_checkpointer()


@pytest.fixture
def damage(
    backend: str, checkpointer: Checkpointer, tmp_path: Path, pg_schema: str, redis_prefix: str
) -> Damage:
    return Damage(backend, checkpointer, tmp_path / "threads.db", pg_schema, redis_prefix)


async def create(
    checkpointer: Checkpointer, thread_id: str, metadata: dict[str, Any] | None = None
) -> ThreadKey:
    key = ThreadKey(thread_id, USER)
    messages = [Message.text_message(f"{thread_id} m{i}") for i in range(3)]
    write = ThreadWrite(0, messages, {}, [(0, 3)], node="n", step=1, metadata=metadata)
    await save(checkpointer, key, write)
    return key


async def three_threads(checkpointer: Checkpointer) -> list[ThreadKey]:
    """t1, t2, t3 saved in that order, so listed newest first as t3, t2, t1."""
    return [await create(checkpointer, f"t{i}", {"topic": "x"}) for i in (1, 2, 3)]


def listed(infos: list[Any]) -> list[str]:
    return [info.key.thread_id for info in infos]


DAMAGED_ROWS = [
    pytest.param("metadata", "[1, 2]", "'metadata' holds a list", id="metadata-not-an-object"),
    pytest.param("metadata", "{oops", "'metadata' is not valid JSON", id="metadata-not-json"),
    pytest.param("version", "seven", "'version' holds 'seven'", id="version-not-an-int"),
]


@pytest.mark.parametrize(("column", "value", "reason"), DAMAGED_ROWS)
async def test_a_damaged_row_is_left_out_of_the_listing_and_logged(
    checkpointer: Checkpointer,
    damage: Damage,
    caplog: pytest.LogCaptureFixture,
    column: str,
    value: str,
    reason: str,
) -> None:
    if not damage.can_hold(column, value):
        pytest.skip(f"{damage.backend} cannot store {value!r} in {column!r}")
    _, t2, _ = await three_threads(checkpointer)
    await damage.thread(t2, column, value)
    with caplog.at_level(logging.WARNING, logger="tenxgraph.storage"):
        assert listed(await checkpointer.alist_threads(USER)) == ["t3", "t1"]
    [record] = [r for r in caplog.records if r.name == "tenxgraph.storage"]
    assert record.levelno == logging.WARNING
    assert "'t2'" in record.getMessage()
    assert reason in record.getMessage()
    assert await checkpointer.athread_info(t2) is None  # its own listing line: left out too


async def test_a_listing_page_keeps_the_damaged_rows_place(
    checkpointer: Checkpointer, damage: Damage
) -> None:
    """Where the database pages, a skipped row still used its slot; every backend does the same."""
    _, t2, _ = await three_threads(checkpointer)
    await damage.thread(t2, "metadata", "[1, 2]")
    assert listed(await checkpointer.alist_threads(USER, limit=2)) == ["t3"]
    assert listed(await checkpointer.alist_threads(USER, offset=2)) == ["t1"]
    assert listed(await checkpointer.alist_threads(USER, metadata={}, limit=2)) == ["t3"]


async def test_metadata_that_is_not_an_object_matches_no_filter(
    checkpointer: Checkpointer, damage: Damage, caplog: pytest.LogCaptureFixture
) -> None:
    """As Postgres' ``@>``: the row is no match, so a filtered listing neither shows nor logs it."""
    _, t2, _ = await three_threads(checkpointer)
    await damage.thread(t2, "metadata", "[1, 2]")
    with caplog.at_level(logging.WARNING, logger="tenxgraph.storage"):
        found = await checkpointer.alist_threads(USER, metadata={"topic": "x"})
    assert listed(found) == ["t3", "t1"]
    assert not [r for r in caplog.records if r.name == "tenxgraph.storage"]


async def test_a_stored_id_over_the_limit_is_skipped_by_the_listing(
    checkpointer: Checkpointer, damage: Damage, caplog: pytest.LogCaptureFixture
) -> None:
    """A row written before the id limit (or by hand) cannot be keyed; the listing says so."""
    _, t2, _ = await three_threads(checkpointer)
    await damage.rename(t2, "x" * 300)
    with caplog.at_level(logging.WARNING, logger="tenxgraph.storage"):
        assert listed(await checkpointer.alist_threads(USER)) == ["t3", "t1"]
    [record] = [r for r in caplog.records if r.name == "tenxgraph.storage"]
    assert "thread_id is 300 characters long, over the limit of 256" in record.getMessage()


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        *DAMAGED_ROWS,
        pytest.param("values", "[1, 2]", "'values' holds a list", id="values-not-an-object"),
    ],
)
async def test_loading_a_damaged_thread_still_raises(
    checkpointer: Checkpointer, damage: Damage, column: str, value: str, reason: str
) -> None:
    """Only listings skip: reading the thread itself names the damage."""
    if not damage.can_hold(column, value):
        pytest.skip(f"this backend cannot hold {value!r} in {column!r}")
    key = await create(checkpointer, "t1")
    await damage.thread(key, column, value)
    with pytest.raises(CorruptRecordError, match=rf"'t1'.*{reason}"):
        await checkpointer.aload(key)


async def test_a_damaged_version_is_named_by_every_read_of_it(
    checkpointer: Checkpointer, damage: Damage
) -> None:
    """The stamp a run checks first, the lease take, and the load all name the column."""
    if damage.backend == "memory" or not damage.can_hold("version", "seven"):
        pytest.skip(f"{damage.backend} cannot store 'seven' in 'version'")
    key = await create(checkpointer, "t1")
    await damage.thread(key, "version", "seven")
    reason = r"'t1' \(user 'alice'\): column 'version' holds 'seven', expected an int >= 1"
    with pytest.raises(CorruptRecordError, match=reason):
        await checkpointer.aversion(key)
    with pytest.raises(CorruptRecordError, match=reason):
        await checkpointer.atake_thread(key, "run-a", 5.0)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("window", "reason"),
    [
        pytest.param("[[0, 1000000000]]", r"\(0, 1000000000\) is not a range", id="past-the-log"),
        pytest.param("[[0, 2], [1, 3]]", r"\(0, 2\) and \(1, 3\) overlap", id="overlapping"),
        pytest.param("[[2, 1]]", r"\(2, 1\) is not a range", id="reversed"),
        pytest.param("[[0, 1.5]]", r"\(0, 1.5\) is not a range", id="not-ints"),
        pytest.param("[[0, true]]", r"\(0, True\) is not a range", id="bool"),
        pytest.param("[[0, 1, 2]]", "not a list of \\[start, end\\]", id="triple"),
        pytest.param('{"0": 3}', "not a list of \\[start, end\\]", id="object"),
    ],
)
async def test_a_damaged_window_names_the_thread(
    checkpointer: Checkpointer, damage: Damage, window: str, reason: str
) -> None:
    key = await create(checkpointer, "t1")
    await damage.thread(key, "window", window)
    with pytest.raises(CorruptRecordError, match=rf"'t1' \(user 'alice'\).*{reason}"):
        await checkpointer.aload(key)
    await damage.checkpoints(key, "window", window)
    with pytest.raises(CorruptRecordError, match=rf"'t1'.*'checkpoint window'.*{reason}"):
        await checkpointer.alist_checkpoints(key)


async def test_a_damaged_log_length_cannot_stretch_the_window(
    checkpointer: Checkpointer, damage: Damage
) -> None:
    """The window fits the stored log length, but the log holds 3 rows: named, not listed."""
    if not damage.can_hold("log_length", 10**9):
        pytest.skip("the in-memory log length is the log itself")
    key = await create(checkpointer, "t1")
    await damage.thread(key, "log_length", 10**9)
    await damage.thread(key, "window", "[[0, 1000000000]]")
    with pytest.raises(
        CorruptRecordError, match=r"'t1'.*names 1000000000 messages but the log lacks 999999997 "
    ):
        await checkpointer.aload(key)


async def test_windows_in_any_order_round_trip(checkpointer: Checkpointer) -> None:
    """A message removed and added back keeps its seq: a window may list it after later ones."""
    key = await create(checkpointer, "t1")
    version = await save(checkpointer, key, ThreadWrite(1, [], {}, [(1, 3), (0, 1)], "n", 2))
    stored = await checkpointer.aload(key)
    assert stored is not None and stored.version == version
    assert stored.window == [(1, 3), (0, 1)]
    assert [m.text() for m in stored.context] == ["t1 m1", "t1 m2", "t1 m0"]


async def test_an_overlapping_window_is_refused_before_writing(checkpointer: Checkpointer) -> None:
    key = await create(checkpointer, "t1")
    with pytest.raises(StateError, match=r"'t1'.*\(0, 2\) and \(1, 3\) overlap"):
        await save(checkpointer, key, ThreadWrite(1, [], {}, [(0, 2), (1, 3)], "n", 2))
    stored = await checkpointer.aload(key)
    assert stored is not None and stored.version == 1


@pytest.mark.parametrize(
    "window",
    [[(0, 1, 2)], [(0,)], [None], 5, [(0, 1), (1, 2, 3)], [(0, 10**5000)]],
    ids=["triple", "single", "none", "not-a-list", "second-triple", "int-over-str-limit"],
)
async def test_a_window_of_another_shape_is_refused_before_writing(
    checkpointer: Checkpointer, window: Any
) -> None:
    """A library error naming the thread, never a raw unpacking or int-to-text error."""
    key = await create(checkpointer, "t1")
    with pytest.raises(StateError, match=r"'t1'"):
        await save(checkpointer, key, ThreadWrite(1, [], {}, window, "n", 2))
    stored = await checkpointer.aload(key)
    assert stored is not None and stored.version == 1
