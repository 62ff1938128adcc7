"""What ``InMemoryCheckpointer`` keeps per thread, beside the shared contract's behaviour."""

from __future__ import annotations

import dataclasses
import gc
import time

import pytest

from tenxgraph.core.state import ThreadKey
from tenxgraph.errors import CorruptRecordError, ThreadBusyError
from tenxgraph.storage.checkpointer import InMemoryCheckpointer
from tenxgraph.testing._checkpointer_base import msg, save
from tenxgraph.testing._checkpointer_threads import write


def _tracked_containers(root: object) -> int:
    """How many objects the cyclic GC tracks among ``root`` and what it reaches (not classes)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, type) or not gc.is_tracked(obj):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return len(seen)


@pytest.mark.parametrize("saves", [1, 4, 15, 16, 40])
async def test_a_thread_holds_a_few_containers_whatever_its_saves(saves: int) -> None:
    """A store of many threads must not hand the cyclic GC an object per checkpoint.

    Each container a thread keeps counts toward the GC's next collection of the
    young objects (a run's, a warm thread's), so a store that grows by a tuple
    per save makes every run in the process pay for collections.
    """
    checkpointer = InMemoryCheckpointer()
    key = ThreadKey("t", "alice")
    for n in range(saves):
        await save(checkpointer, key, write(n, [msg(f"m{n}")], [(0, n + 1)], {"n": n}, step=n))
    gc.collect()  # exact tuples of plain values are untracked by a collection
    thread = checkpointer._tenants["alice"]["t"]
    batches = saves // 16  # sealed together, each one object (and a tuple holding them)
    # the row, its log and its newest checkpoints' fields, then the sealed batches
    assert _tracked_containers(thread) == 3 + (batches and batches + 1)
    assert [c.version for c in await checkpointer.alist_checkpoints(key)] == list(
        range(saves, 0, -1)
    )


@pytest.mark.parametrize("keep", [1, 15, 17, 20, 31])
async def test_retention_inside_a_sealed_batch_reads_only_the_kept(keep: int) -> None:
    """A batch partly past ``keep`` stays sealed; its dropped checkpoints are never read."""
    checkpointer = InMemoryCheckpointer(keep_checkpoints=keep)
    key = ThreadKey("t", "alice")
    for n in range(40):
        await save(checkpointer, key, write(n, [msg(f"m{n}")], [(0, n + 1)], {"n": n}, step=n))
    kept = list(range(40, 40 - keep, -1))
    assert [c.version for c in await checkpointer.alist_checkpoints(key)] == kept
    assert [c.version for c in await checkpointer.alist_checkpoints(key, limit=3)] == kept[:3]
    oldest = await checkpointer.aget_checkpoint(key, kept[-1])
    assert oldest is not None and oldest.values == {"n": kept[-1] - 1}
    assert await checkpointer.aget_checkpoint(key, kept[-1] - 1) is None
    stored = await checkpointer.aload(key)
    assert stored is not None
    await checkpointer.arewind(key, stored.stamp, kept[-1])
    after = await checkpointer.alist_checkpoints(key)
    assert [c.version for c in after] == [41, kept[-1]]  # the rollback's, then its target
    assert after[0].values == after[1].values


async def test_sealing_a_batch_does_not_copy_the_earlier_ones() -> None:
    """A save costs the same at any history length: the batches are appended to in place."""
    checkpointer = InMemoryCheckpointer()
    key = ThreadKey("t", "alice")
    for n in range(48):
        await save(checkpointer, key, write(n, [msg(f"m{n}")], [(0, n + 1)], {"n": n}, step=n))
        if n == 15:
            batches = checkpointer._tenants["alice"]["t"].sealed
    thread = checkpointer._tenants["alice"]["t"]
    assert thread.sealed is batches and len(batches) == 3
    assert [c.version for c in await checkpointer.alist_checkpoints(key)] == list(range(48, 0, -1))


async def test_a_save_is_fenced_by_its_tenants_lease_and_can_give_it_up() -> None:
    """The lease ``asave`` checks (and releases) is the one of the write's user and thread."""
    checkpointer = InMemoryCheckpointer()
    alice, bob = ThreadKey("t", "alice"), ThreadKey("alice", "t")  # the ids swapped
    assert await checkpointer.atake_lease(alice, "run-a", 30) is None
    assert await checkpointer.atake_lease(bob, "run-b", 30) is None
    first = dataclasses.replace(write(0, [msg("m0")], [(0, 1)]), lease="run-a")
    stamp = await checkpointer.asave(alice, first)  # alice's lease is run-a's
    with pytest.raises(ThreadBusyError):
        await checkpointer.asave(bob, dataclasses.replace(first, lease="run-a"))
    assert await checkpointer.aversion(bob) is None  # refused: nothing written
    last = dataclasses.replace(
        write(1, [msg("m1")], [(0, 2)]),
        expected_incarnation=stamp.incarnation,
        lease="run-a",
        release_lease=True,
    )
    await checkpointer.asave(alice, last)
    assert await checkpointer.atake_lease(alice, "run-c", 30) is None  # given up with the save
    assert await checkpointer.atake_lease(bob, "run-c", 30) == "run-b"  # bob's still held
    with pytest.raises(ThreadBusyError):  # run-a's lease is gone: its saves are refused
        await checkpointer.asave(alice, dataclasses.replace(last, expected_version=2))


async def test_threads_saved_at_one_instant_are_listed_by_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ties in ``updated_at`` go by thread id, as the SQL backends' ``ORDER BY`` has them."""
    checkpointer = InMemoryCheckpointer()
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    for name in ["b", "c", "a"]:
        await save(checkpointer, ThreadKey(name, "alice"), write(0, [msg(name)], [(0, 1)]))
    listed = await checkpointer.alist_threads("alice")
    assert [info.key.thread_id for info in listed] == ["a", "b", "c"]


async def test_a_damaged_message_is_named_by_its_seq_in_a_later_window() -> None:
    """A load names the first bad row by its seq, wherever the window starts in the log."""
    checkpointer = InMemoryCheckpointer()
    key = ThreadKey("t", "alice")
    messages = [msg(f"m{n}") for n in range(6)]
    await save(checkpointer, key, write(0, messages, [(3, 6)]))
    checkpointer._tenants["alice"]["t"].log[4] = b'{"role": "nobody"}'
    with pytest.raises(CorruptRecordError, match=r"'t' \(user 'alice'\): message seq 4\b"):
        await checkpointer.aload(key)
    with pytest.raises(CorruptRecordError, match=r"message seq 4\b"):
        await checkpointer.aload_messages(key, [(3, 6)])
    with pytest.raises(CorruptRecordError, match=r"message seq 4\b"):
        await checkpointer.alist_messages(key, offset=2)
