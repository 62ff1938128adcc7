"""Checkpointer.aversion, on every backend: what a warm runtime trusts instead of a reload."""

from __future__ import annotations

from tenxgraph.core.state import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import Checkpointer, ThreadStamp, ThreadWrite


async def test_the_stamp_follows_every_save_and_delete(checkpointer: Checkpointer) -> None:
    key, other_tenant = ThreadKey("v"), ThreadKey("v", "someone-else")
    assert await checkpointer.aversion(key) is None
    write = ThreadWrite(0, [Message.text_message("a")], {}, [(0, 1)], node="n", step=1)
    first = await checkpointer.asave(key, write)
    assert isinstance(first, ThreadStamp) and first.version == 1
    assert await checkpointer.aversion(key) == first
    assert await checkpointer.aversion(other_tenant) is None
    write = ThreadWrite(first.version, [Message.text_message("b")], {}, [(0, 2)], "n", 2)
    write.expected_incarnation = first.incarnation
    second = await checkpointer.asave(key, write)
    assert second == (first.incarnation, 2)  # the identity is kept by every save
    assert await checkpointer.aversion(key) == second
    stored = await checkpointer.aload(key)
    assert stored is not None and stored.stamp == second
    assert await checkpointer.adelete_thread(key)
    assert await checkpointer.aversion(key) is None
