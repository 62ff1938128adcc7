"""The thread part of the checkpointer contract: what a save stores and what loading gives back.

A thread is an append-only log of messages plus a small state row (values,
window, version); saves are compare-and-swap on the version, tenants never
see each other, stored data is plain JSON, and retention drops only old
checkpoints.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message, TokenUsages
from tenxgraph.core.state.message_block import TextBlock, ToolCallBlock
from tenxgraph.errors import ConflictError, StateError, ThreadNotFoundError
from tenxgraph.storage.checkpointer import Checkpointer, StoredThread, ThreadWrite
from tenxgraph.testing._checkpointer_base import ContractBase, MakeCheckpointer, msg, save

KEY = ThreadKey("thread-1", "alice")


def write(
    expected: int,
    messages: list[Message],
    window: list[tuple[int, int]],
    values: dict[str, Any] | None = None,
    *,
    node: str = "MAIN",
    step: int = 1,
    metadata: dict[str, Any] | None = None,
) -> ThreadWrite:
    """A write of ``messages`` expecting version ``expected`` (0: creating)."""
    return ThreadWrite(
        expected_version=expected,
        new_messages=messages,
        values={"context_summary": None} if values is None else values,
        window=window,
        node=node,
        step=step,
        metadata=metadata,
    )


def dumps(messages: list[Message]) -> list[dict[str, Any]]:
    """The messages as JSON, to compare what was saved with what came back."""
    return [m.model_dump(mode="json") for m in messages]


async def load(checkpointer: Checkpointer, key: ThreadKey = KEY) -> StoredThread:
    """The stored thread, which must exist."""
    stored = await checkpointer.aload(key)
    assert stored is not None
    return stored


async def grow(checkpointer: Checkpointer, count: int, key: ThreadKey = KEY) -> list[Message]:
    """A thread of ``count`` messages saved two per step, the window covering all of them."""
    messages = [msg(f"m{i}", "user" if i % 2 == 0 else "assistant") for i in range(count)]
    version = 0
    for start in range(0, count, 2):
        version = await save(
            checkpointer,
            key,
            write(version, messages[start : start + 2], [(0, min(start + 2, count))]),
        )
    return messages


class ThreadContract(ContractBase):
    """Saving, loading, listing and deleting threads: versions, windows, tenants, retention."""

    async def test_create_then_load_round_trips_everything(
        self, checkpointer: Checkpointer
    ) -> None:
        usage = TokenUsages(completion_tokens=3, prompt_tokens=5, total_tokens=8)
        first = [
            msg("hello"),
            Message(
                role="assistant",
                content=[
                    TextBlock(text="calling"),
                    ToolCallBlock(id="c1", name="f", args={"x": 1}),
                ],
                usages=usage,
                message_id=42,
            ),
        ]
        values = {"context_summary": "earlier", "execution_meta": {"step": 3}, "city": "Paris"}
        version = await save(
            checkpointer, KEY, write(0, first, [(0, 2)], values, metadata={"topic": "weather"})
        )
        assert version == 1
        stored = await load(checkpointer)
        assert stored.key == KEY
        assert (stored.version, stored.log_length) == (1, 2)
        assert stored.values == values
        assert stored.window == [(0, 2)]
        assert stored.metadata == {"topic": "weather"}
        assert dumps(stored.context) == dumps(first)
        assert stored.context[1].message_id == 42
        assert stored.context[1].usages == usage

    async def test_append_adds_only_new_messages(self, checkpointer: Checkpointer) -> None:
        first, second = [msg("a"), msg("b", "assistant")], [msg("c"), msg("d", "assistant")]
        await save(checkpointer, KEY, write(0, first, [(0, 2)], metadata={"k": 1}))
        version = await save(
            checkpointer, KEY, write(1, second, [(0, 4)], {"context_summary": "s"})
        )
        assert version == 2
        stored = await load(checkpointer)
        assert (stored.version, stored.log_length, stored.window) == (2, 4, [(0, 4)])
        assert stored.values == {"context_summary": "s"}
        assert stored.metadata == {"k": 1}  # None keeps the stored metadata
        assert dumps(stored.context) == dumps(first + second)
        log = await checkpointer.alist_messages(KEY)
        assert [m.seq for m in log] == [0, 1, 2, 3]
        assert dumps([m.message for m in log]) == dumps(first + second)
        # a save without messages still records a step
        assert await save(checkpointer, KEY, write(2, [], [(2, 4)], metadata={"k": 2})) == 3
        stored = await load(checkpointer)
        assert (stored.log_length, stored.window, stored.metadata) == (4, [(2, 4)], {"k": 2})
        assert dumps(stored.context) == dumps(second)

    async def test_unknown_thread(self, checkpointer: Checkpointer) -> None:
        assert await checkpointer.aload(KEY) is None
        assert await checkpointer.alist_messages(KEY) == []
        assert list(await checkpointer.alist_checkpoints(KEY)) == []
        assert await checkpointer.adelete_thread(KEY) is False
        with pytest.raises(ThreadNotFoundError, match="thread-1"):
            await checkpointer.aload_messages(KEY, [])

    async def test_stale_version_conflicts_and_writes_nothing(
        self, checkpointer: Checkpointer
    ) -> None:
        await grow(checkpointer, 4)  # versions 1 and 2
        before = await load(checkpointer)
        log_before = await checkpointer.alist_messages(KEY)
        checkpoints_before = await checkpointer.alist_checkpoints(KEY)
        intruder = msg("lost?")
        with pytest.raises(ConflictError) as raised:
            await save(checkpointer, KEY, write(1, [intruder], [(0, 5)], {"context_summary": "x"}))
        assert (raised.value.expected, raised.value.actual) == (1, 2)
        with pytest.raises(ConflictError) as raised:
            await save(checkpointer, KEY, write(0, [intruder], [(0, 1)]))
        assert (raised.value.expected, raised.value.actual) == (0, 2)
        with pytest.raises(ConflictError) as raised:
            await save(checkpointer, ThreadKey("nobody", "alice"), write(3, [intruder], [(0, 1)]))
        assert raised.value.actual is None
        after = await load(checkpointer)
        assert (after.version, after.log_length, after.values, after.window) == (
            before.version,
            before.log_length,
            before.values,
            before.window,
        )
        assert dumps(after.context) == dumps(before.context)
        log_after = await checkpointer.alist_messages(KEY)
        assert dumps([m.message for m in log_after]) == dumps([m.message for m in log_before])
        assert len(await checkpointer.alist_checkpoints(KEY)) == len(checkpoints_before)
        assert await checkpointer.aload(ThreadKey("nobody", "alice")) is None

    async def test_concurrent_tasks_one_winner(self, checkpointer: Checkpointer) -> None:
        await grow(checkpointer, 2)
        contenders = [msg(f"from task {i}") for i in range(8)]
        results = await asyncio.gather(
            *(save(checkpointer, KEY, write(1, [m], [(0, 3)])) for m in contenders),
            return_exceptions=True,
        )
        winners = [i for i, result in enumerate(results) if result == 2]
        assert len(winners) == 1
        assert all(isinstance(r, ConflictError) for i, r in enumerate(results) if i != winners[0])
        log = await checkpointer.alist_messages(KEY)
        assert len(log) == 3
        assert log[2].message.text() == contenders[winners[0]].text()

    async def test_load_returns_window_messages_in_window_order(
        self, checkpointer: Checkpointer
    ) -> None:
        messages = await grow(checkpointer, 6)
        await save(checkpointer, KEY, write(3, [], [(4, 6), (0, 1), (2, 3)]))
        stored = await load(checkpointer)
        assert stored.window == [(4, 6), (0, 1), (2, 3)]
        assert [m.text() for m in stored.context] == ["m4", "m5", "m0", "m2"]
        assert stored.log_length == 6
        assert [m.message_id for m in stored.context] == [
            messages[i].message_id for i in (4, 5, 0, 2)
        ]

    async def test_window_outside_the_log_is_rejected_before_writing(
        self,
        checkpointer: Checkpointer,
    ) -> None:
        await grow(checkpointer, 2)
        with pytest.raises(StateError, match=r"window\[1\] = \(2, 4\)"):
            await save(checkpointer, KEY, write(1, [msg("x")], [(0, 2), (2, 4)]))
        with pytest.raises(StateError, match="window"):
            await save(checkpointer, KEY, write(1, [], [(1, 0)]))
        with pytest.raises(StateError, match="window"):
            await save(checkpointer, KEY, write(1, [], [(0, 1.0)]))  # type: ignore[list-item]
        stored = await load(checkpointer)
        assert (stored.version, stored.log_length) == (1, 2)
        assert len(await checkpointer.alist_messages(KEY)) == 2

    async def test_list_messages_pages_over_the_whole_log(self, checkpointer: Checkpointer) -> None:
        messages = await grow(checkpointer, 10)
        await save(checkpointer, KEY, write(5, [], [(8, 10)]))  # trimmed: 8 messages out of context
        assert [m.text() for m in (await load(checkpointer)).context] == ["m8", "m9"]
        everything = await checkpointer.alist_messages(KEY)
        assert [m.seq for m in everything] == list(range(10))
        assert dumps([m.message for m in everything]) == dumps(messages)
        page = await checkpointer.alist_messages(KEY, offset=3, limit=4)
        assert [(m.seq, m.message.text()) for m in page] == [(i, f"m{i}") for i in range(3, 7)]
        assert [m.seq for m in await checkpointer.alist_messages(KEY, offset=9, limit=5)] == [9]
        assert await checkpointer.alist_messages(KEY, offset=20) == []
        assert await checkpointer.alist_messages(KEY, limit=0) == []
        with pytest.raises(ValueError, match="offset"):
            await checkpointer.alist_messages(KEY, offset=-1)

    async def test_a_negative_offset_or_limit_is_refused_by_every_listing(
        self, checkpointer: Checkpointer
    ) -> None:
        await grow(checkpointer, 2)
        offsets: list[Callable[[], Awaitable[object]]] = [
            lambda: checkpointer.alist_messages(KEY, offset=-1),
            lambda: checkpointer.alist_threads("alice", offset=-1),
        ]
        for listing in offsets:
            with pytest.raises(ValueError, match="offset"):
                await listing()
        limits: list[Callable[[], Awaitable[object]]] = [
            lambda: checkpointer.alist_messages(KEY, limit=-1),
            lambda: checkpointer.alist_threads("alice", limit=-1),
            lambda: checkpointer.alist_checkpoints(KEY, limit=-1),
        ]
        for listing in limits:
            with pytest.raises(ValueError, match="limit"):
                await listing()
        assert len(await checkpointer.alist_checkpoints(KEY, limit=0)) == 0

    async def test_list_threads_by_user_and_metadata(self, checkpointer: Checkpointer) -> None:
        async def create(key: ThreadKey, metadata: dict[str, Any] | None) -> None:
            await save(
                checkpointer, key, write(0, [msg(key.thread_id)], [(0, 1)], metadata=metadata)
            )

        await create(ThreadKey("t1", "alice"), {"topic": "x", "tags": ["a", "b"], "n": {"deep": 1}})
        await create(ThreadKey("t2", "alice"), {"topic": "y", "flag": True})
        await create(ThreadKey("t3", "alice"), None)
        await create(ThreadKey("t1", "bob"), {"topic": "x"})

        listed = await checkpointer.alist_threads("alice")
        assert [info.key.thread_id for info in listed] == ["t3", "t2", "t1"]  # newest first
        assert all(info.key.user_id == "alice" for info in listed)
        assert (listed[0].version, listed[0].log_length, listed[0].metadata) == (1, 1, {})
        assert listed[2].metadata == {"topic": "x", "tags": ["a", "b"], "n": {"deep": 1}}
        assert listed[2].created_at <= listed[2].updated_at

        async def ids(user: str = "alice", **query: Any) -> list[str]:
            return [info.key.thread_id for info in await checkpointer.alist_threads(user, **query)]

        assert await ids(metadata={"topic": "x"}) == ["t1"]
        assert await ids(metadata={"tags": ["a"]}) == ["t1"]
        assert await ids(metadata={"n": {"deep": 1}}) == ["t1"]
        assert await ids(metadata={"flag": True}) == ["t2"]
        assert await ids(metadata={"flag": 1}) == []  # JSON true is not 1
        assert await ids(metadata={"topic": "z"}) == []
        assert await ids(metadata={}) == ["t3", "t2", "t1"]
        assert await ids(offset=1, limit=1) == ["t2"]
        assert await ids(metadata={"topic": "x"}, offset=1) == []
        assert await ids("bob") == ["t1"]
        assert await ids("bob", metadata={"topic": "x"}) == ["t1"]
        assert await ids("carol") == []

        await save(checkpointer, ThreadKey("t1", "alice"), write(1, [], [(0, 1)]))
        assert await ids() == ["t1", "t3", "t2"]  # a save moves the thread to the front

    async def test_thread_info_is_the_listing_line(self, checkpointer: Checkpointer) -> None:
        alice, bob = ThreadKey("t1", "alice"), ThreadKey("t1", "bob")
        assert await checkpointer.athread_info(alice) is None
        await save(checkpointer, alice, write(0, [msg("a")], [(0, 1)], metadata={"topic": "x"}))
        await save(checkpointer, ThreadKey("t2", "alice"), write(0, [msg("b")], [(0, 1)]))
        info = await checkpointer.athread_info(alice)
        assert info is not None
        assert info == (await checkpointer.alist_threads("alice"))[1]
        assert (info.key, info.version, info.log_length, info.metadata) == (
            alice,
            1,
            1,
            {"topic": "x"},
        )
        assert await checkpointer.athread_info(bob) is None  # another tenant's id
        await checkpointer.adelete_thread(alice)
        assert await checkpointer.athread_info(alice) is None

    async def test_delete_removes_everything(self, checkpointer: Checkpointer) -> None:
        await grow(checkpointer, 4)
        other = ThreadKey("thread-2", "alice")
        await grow(checkpointer, 2, other)
        assert await checkpointer.adelete_thread(KEY) is True
        assert await checkpointer.aload(KEY) is None
        assert await checkpointer.alist_messages(KEY) == []
        assert list(await checkpointer.alist_checkpoints(KEY)) == []
        assert [i.key for i in await checkpointer.alist_threads("alice")] == [other]
        with pytest.raises(ThreadNotFoundError):
            await checkpointer.aload_messages(KEY, [(0, 1)])
        assert await checkpointer.adelete_thread(KEY) is False
        assert (await load(checkpointer, other)).log_length == 2  # the neighbour is untouched
        # the id can be used again, from scratch
        assert await save(checkpointer, KEY, write(0, [msg("again")], [(0, 1)])) == 1
        stored = await load(checkpointer)
        assert [m.text() for m in stored.context] == ["again"]
        assert [m.seq for m in await checkpointer.alist_messages(KEY)] == [0]
        assert [c.version for c in await checkpointer.alist_checkpoints(KEY)] == [1]

    async def test_checkpoints_newest_first_with_values_and_window(
        self,
        checkpointer: Checkpointer,
    ) -> None:
        await save(checkpointer, KEY, write(0, [msg("a")], [(0, 1)], {"n": 1}, node="IN", step=1))
        await save(
            checkpointer, KEY, write(1, [msg("b")], [(0, 2)], {"n": 2}, node="AGENT", step=2)
        )
        await save(checkpointer, KEY, write(2, [], [(1, 2)], {"n": 3}, node="TRIM", step=3))
        checkpoints = await checkpointer.alist_checkpoints(KEY)
        assert [(c.version, c.node, c.step, c.log_length) for c in checkpoints] == [
            (3, "TRIM", 3, 2),
            (2, "AGENT", 2, 2),
            (1, "IN", 1, 1),
        ]
        assert [c.values for c in checkpoints] == [{"n": 3}, {"n": 2}, {"n": 1}]
        assert [c.window for c in checkpoints] == [[(1, 2)], [(0, 2)], [(0, 1)]]
        assert checkpoints[0].created_at >= checkpoints[2].created_at
        assert [c.version for c in await checkpointer.alist_checkpoints(KEY, limit=2)] == [3, 2]

    async def test_values_given_as_json_text_are_stored_as_that_object(
        self, checkpointer: Checkpointer
    ) -> None:
        text = '{"context_summary":null,"execution_meta":{"step":2},"city":"Paris"}'
        await save(checkpointer, KEY, write(0, [msg("a")], [(0, 1)], node="IN", step=2))
        as_text = write(1, [], [(0, 1)], node="TEXT", step=2)
        as_text.values = text
        await save(checkpointer, KEY, as_text)
        expected = {"context_summary": None, "execution_meta": {"step": 2}, "city": "Paris"}
        assert (await load(checkpointer)).values == expected
        assert (await checkpointer.alist_checkpoints(KEY, limit=1))[0].values == expected
        for bad in ("[1, 2]", "", "null", '{"a":}', '{"a": NaN}', "{} {}"):
            as_text.values, as_text.expected_version = bad, 2
            with pytest.raises(StateError, match="values given as text must be a JSON object"):
                await save(checkpointer, KEY, as_text)
        assert (await load(checkpointer)).version == 2

    async def test_a_long_history_lists_every_checkpoint_and_keeps_the_newest(
        self, make_checkpointer: MakeCheckpointer
    ) -> None:
        saves = 70
        for keep in (None, 1, 16, 17, 20, 25, 33):  # around the in-memory store's batches of 16
            checkpointer = make_checkpointer(keep_checkpoints=keep)
            key, version = ThreadKey(f"long-{keep}", "alice"), 0
            for n in range(saves):
                step = write(version, [msg(f"m{n}")], [(0, n + 1)], {"n": n}, step=n)
                version = await save(checkpointer, key, step)
            checkpoints = await checkpointer.alist_checkpoints(key)
            versions = list(range(saves, 0 if keep is None else saves - keep, -1))
            assert [c.version for c in checkpoints] == versions, f"keep={keep}"
            assert [(c.step, c.log_length, c.window, c.values) for c in checkpoints] == [
                (v - 1, v, [(0, v)], {"n": v - 1}) for v in versions
            ]
            assert [c.version for c in await checkpointer.alist_checkpoints(key, limit=17)] == (
                versions[:17]
            )

    async def test_messages_of_a_past_window(self, checkpointer: Checkpointer) -> None:
        await grow(checkpointer, 6)
        await save(checkpointer, KEY, write(3, [msg("m6")], [(5, 7)]))  # trim, then add
        oldest = (await checkpointer.alist_checkpoints(KEY))[-1]
        assert oldest.window == [(0, 2)]
        past = await checkpointer.aload_messages(KEY, oldest.window)
        assert [m.text() for m in past] == ["m0", "m1"]
        assert [m.text() for m in await checkpointer.aload_messages(KEY, [(6, 7), (1, 3)])] == [
            "m6",
            "m1",
            "m2",
        ]
        assert await checkpointer.aload_messages(KEY, []) == []
        with pytest.raises(StateError, match="window"):
            await checkpointer.aload_messages(KEY, [(0, 8)])

    async def test_tenants_never_see_each_other(self, checkpointer: Checkpointer) -> None:
        alice, mallory = ThreadKey("shared-id", "alice"), ThreadKey("shared-id", "mallory")
        await save(checkpointer, alice, write(0, [msg("alice's secret")], [(0, 1)], {"s": 1}))
        assert await checkpointer.aload(mallory) is None
        assert await checkpointer.alist_messages(mallory) == []
        assert list(await checkpointer.alist_checkpoints(mallory)) == []
        assert await checkpointer.alist_threads("mallory") == []
        with pytest.raises(ThreadNotFoundError):
            await checkpointer.aload_messages(mallory, [(0, 1)])
        assert await checkpointer.adelete_thread(mallory) is False
        with pytest.raises(ConflictError):
            await save(checkpointer, mallory, write(1, [msg("overwrite")], [(0, 2)]))
        # the same id under another user is another thread
        await save(checkpointer, mallory, write(0, [msg("mallory's")], [(0, 1)], {"s": 2}))
        await save(checkpointer, mallory, write(1, [msg("more")], [(0, 2)], {"s": 3}))
        stored = await load(checkpointer, alice)
        assert (stored.version, stored.values) == (1, {"s": 1})
        assert [m.text() for m in stored.context] == ["alice's secret"]
        assert [m.message.text() for m in await checkpointer.alist_messages(alice)] == [
            "alice's secret"
        ]
        assert await checkpointer.adelete_thread(mallory) is True
        assert (await load(checkpointer, alice)).version == 1

    async def test_retention_keeps_the_newest_checkpoints(
        self, make_checkpointer: MakeCheckpointer
    ) -> None:
        checkpointer = make_checkpointer(keep_checkpoints=2)
        await grow(checkpointer, 10)  # 5 saves
        checkpoints = await checkpointer.alist_checkpoints(KEY)
        assert [c.version for c in checkpoints] == [5, 4]
        assert checkpoints[0].window == [(0, 10)]
        stored = await load(checkpointer)  # the state row is never pruned
        assert (stored.version, stored.log_length) == (5, 10)
        assert len(await checkpointer.alist_messages(KEY)) == 10
        assert len(await checkpointer.aload_messages(KEY, checkpoints[-1].window)) == 8

    async def test_retention_of_one_keeps_the_newest(
        self, make_checkpointer: MakeCheckpointer
    ) -> None:
        checkpointer = make_checkpointer(keep_checkpoints=1)
        await grow(checkpointer, 6)
        assert [c.version for c in await checkpointer.alist_checkpoints(KEY)] == [3]
        with pytest.raises(ValueError, match="keep_checkpoints"):
            make_checkpointer(keep_checkpoints=0)

    async def test_stored_data_is_plain_data(self, checkpointer: Checkpointer) -> None:
        """Strings that look like class paths come back as strings, never as objects."""
        lookalike = {
            "__class__": "tenxgraph.core.state.message.Message",
            "py/object": "subprocess.Popen",
            "lc": 1,
            "type": "constructor",
            "id": ["os", "system"],
            "kwargs": {"cmd": "rm -rf /"},
        }
        message = msg(
            "hi", metadata={"cls": "builtins.eval", **lookalike}, parsed_content=dict(lookalike)
        )
        await save(
            checkpointer,
            KEY,
            write(0, [message], [(0, 1)], {"custom": lookalike}, metadata={"m": lookalike}),
        )
        stored = await load(checkpointer)
        assert stored.values == {"custom": lookalike}
        assert type(stored.values["custom"]) is dict
        assert stored.metadata == {"m": lookalike}
        loaded = stored.context[0]
        assert type(loaded) is Message
        assert loaded.parsed_content == lookalike
        assert type(loaded.parsed_content) is dict
        assert loaded.metadata["cls"] == "builtins.eval"
        checkpoint = (await checkpointer.alist_checkpoints(KEY))[0]
        assert checkpoint.values == {"custom": lookalike}

    async def test_later_mutation_does_not_change_stored_data(
        self, checkpointer: Checkpointer
    ) -> None:
        message = msg("original", metadata={"k": "v"})
        values: dict[str, Any] = {"items": [1, 2]}
        window = [(0, 1)]
        await save(checkpointer, KEY, write(0, [message], window, values))
        message.metadata["k"] = "changed"
        message.content.append(TextBlock(text="added"))
        values["items"].append(3)
        window.append((0, 1))
        stored = await load(checkpointer)
        assert stored.values == {"items": [1, 2]}
        assert stored.window == [(0, 1)]
        assert stored.context[0].metadata == {"k": "v"}
        assert stored.context[0].text() == "original"
        stored.values["items"].append(99)  # mutating a loaded copy changes nothing either
        stored.context[0].metadata["k"] = "mutated"
        again = await load(checkpointer)
        assert again.values == {"items": [1, 2]}
        assert again.context[0].metadata == {"k": "v"}

    async def test_bad_writes_are_refused_and_write_nothing(
        self, checkpointer: Checkpointer
    ) -> None:
        with pytest.raises(StateError, match="values must be JSON"):
            await save(checkpointer, KEY, write(0, [msg("a")], [(0, 1)], {"when": object()}))
        with pytest.raises(StateError, match="delta"):
            await save(checkpointer, KEY, write(0, [msg("a", delta=True)], [(0, 1)]))
        with pytest.raises(StateError, match="metadata must be JSON"):
            await save(checkpointer, KEY, write(0, [msg("a")], [(0, 1)], metadata={"x": {1, 2}}))
        with pytest.raises(ValueError, match="expected_version"):
            await save(checkpointer, KEY, write(-1, [], []))
        assert await checkpointer.aload(KEY) is None
        assert await checkpointer.alist_messages(KEY) == []
