"""Decoding many messages pauses the cyclic GC, and always puts it back as it was."""

from __future__ import annotations

import gc

import pytest

from tenxgraph.core.state.message import Message, compact_json
from tenxgraph.errors import CorruptRecordError
from tenxgraph.storage.checkpointer._codec import decode_messages
from tenxgraph.storage.checkpointer._gc_pause import MANY_MESSAGES, gc_paused
from tenxgraph.storage.checkpointer.base import ThreadKey

KEY = ThreadKey("t")


def test_the_collector_is_off_only_during_a_large_decode() -> None:
    seen = []
    with gc_paused(MANY_MESSAGES - 1):
        seen.append(gc.isenabled())
    with gc_paused(MANY_MESSAGES):
        seen.append(gc.isenabled())
    assert seen == [True, False] and gc.isenabled()


def test_a_failed_large_decode_turns_the_collector_back_on() -> None:
    bodies = [compact_json(Message.text_message(f"m{i}")) for i in range(MANY_MESSAGES)]
    bodies[-1] = bodies[-1].replace('"user"', '"nobody"')
    with pytest.raises(CorruptRecordError, match=f"seq {MANY_MESSAGES - 1}.*role"):
        decode_messages(KEY, range(MANY_MESSAGES), bodies)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_application_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused(MANY_MESSAGES):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
