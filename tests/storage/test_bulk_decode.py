"""Decoding many messages at once: same messages, and the collector left as the process wants it."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from tenxgraph.core.state.message import Message, MessagesAdapter
from tenxgraph.storage.checkpointer import _bulk_decode
from tenxgraph.storage.checkpointer._bulk_decode import GC_PAUSE_AT, validate_many

MANY = GC_PAUSE_AT + 5


def joined(count: int) -> str:
    return (
        "[" + ",".join(Message.text_message(f"m{i}").model_dump_json() for i in range(count)) + "]"
    )


def oldest_ids() -> set[int]:
    return {id(item) for item in gc.get_objects(generation=2)}


@pytest.fixture
def freezes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``gc.freeze`` and ``gc.unfreeze`` calls made, passed on; the flag as in a new process."""
    monkeypatch.setattr(_bulk_decode, "_user_froze", False)
    calls: list[str] = []

    def recorded(name: str) -> Callable[[], None]:
        real = getattr(gc, name)

        def call() -> None:
            calls.append(name)
            real()

        return call

    for name in ("freeze", "unfreeze"):
        monkeypatch.setattr(gc, name, recorded(name))
    return calls


def test_many_messages_decode_as_the_adapter_does_and_go_to_the_oldest_generation(
    freezes: list[str],
) -> None:
    text = joined(MANY)
    messages = validate_many(text, MANY)
    assert messages == MessagesAdapter.validate_json(text)
    assert gc.isenabled()
    assert gc.get_count()[0] < 100  # nothing young is left for the next collection to walk
    assert {id(messages[0]), id(messages[-1])} <= oldest_ids()
    assert freezes == ["freeze", "unfreeze"]


def test_few_messages_leave_the_generations_alone(freezes: list[str]) -> None:
    assert len(validate_many(joined(3), 3)) == 3
    assert freezes == []


def test_a_collector_the_caller_turned_off_stays_off_and_nothing_moves(
    freezes: list[str],
) -> None:
    gc.disable()
    try:
        assert len(validate_many(joined(MANY), MANY)) == MANY
        assert not gc.isenabled()
        assert freezes == []
    finally:
        gc.enable()


def test_a_failed_decode_turns_the_collector_back_on(freezes: list[str]) -> None:
    text = joined(MANY).replace('"role":"user"', '"role":"robot"', 1)
    with pytest.raises(ValidationError):
        validate_many(text, MANY)
    assert gc.isenabled()
    assert freezes == []


def test_objects_the_process_froze_stay_frozen(freezes: list[str]) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert len(validate_many(joined(MANY), MANY)) == MANY
        assert gc.get_freeze_count() >= frozen  # not thawed by the decode
        assert _bulk_decode._user_froze  # and the later decodes do not look again
    finally:
        gc.unfreeze()
    assert len(validate_many(joined(MANY), MANY)) == MANY
    assert freezes == ["freeze", "unfreeze"]  # the test's own: none by the decodes
