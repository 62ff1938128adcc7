"""Checkpointer.aversion, on every backend: what a warm runtime trusts instead of a reload."""

from __future__ import annotations

from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import Checkpointer, ThreadKey, ThreadWrite


async def test_version_follows_every_save_and_delete(checkpointer: Checkpointer) -> None:
    key, other_tenant = ThreadKey("v"), ThreadKey("v", "someone-else")
    assert await checkpointer.aversion(key) is None
    write = ThreadWrite(0, [Message.text_message("a")], {}, [(0, 1)], node="n", step=1)
    first = await checkpointer.asave(key, write)
    assert await checkpointer.aversion(key) == first
    assert await checkpointer.aversion(other_tenant) is None
    write = ThreadWrite(first, [Message.text_message("b")], {}, [(0, 2)], node="n", step=2)
    second = await checkpointer.asave(key, write)
    assert await checkpointer.aversion(key) == second != first
    assert await checkpointer.adelete_thread(key)
    assert await checkpointer.aversion(key) is None
