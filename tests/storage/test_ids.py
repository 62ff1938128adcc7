"""Thread and user ids: one rule on every backend, checked before anything is written.

An id is a non-empty str of at most ``MAX_ID_LENGTH`` (256) characters,
without NUL, encodable as UTF-8. In a run config, ``user_id`` missing or
None is the ``"default"`` tenant; an int id is read as its decimal text; any
other value raises ``InvalidIdError`` naming it.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tenxgraph.core.graph import create_agent
from tenxgraph.core.llm import FunctionModel
from tenxgraph.core.state import DEFAULT_USER, MAX_ID_LENGTH, ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.errors import InvalidIdError, StateError
from tenxgraph.storage.checkpointer import Checkpointer, ThreadWrite

BAD_IDS = [
    pytest.param("", "must not be empty", id="empty"),
    pytest.param(
        "x" * (MAX_ID_LENGTH + 1), "is 257 characters long, over the limit of 256", id="long"
    ),
    pytest.param("a\x00b", "must not contain NUL", id="nul"),
    pytest.param("a\ud800b", "holds characters UTF-8 cannot encode", id="surrogate"),
    pytest.param(b"t1", "must be a str, got bytes b't1'", id="bytes"),
    pytest.param(1.0, "must be a str, got float 1.0", id="float"),
    pytest.param(False, "must be a str, got bool False", id="false"),
    pytest.param(["t1"], "must be a str, got list", id="list"),
]


def write(messages: int = 1) -> ThreadWrite:
    batch = [Message.text_message(f"m{i}") for i in range(messages)]
    return ThreadWrite(0, batch, {}, [(0, messages)], node="n", step=1)


@pytest.mark.parametrize(("bad", "reason"), BAD_IDS)
@pytest.mark.parametrize("field", ["thread_id", "user_id"])
def test_a_bad_id_is_refused_with_its_value(field: str, bad: Any, reason: str) -> None:
    good = {"thread_id": "t1", "user_id": "alice"}
    with pytest.raises(InvalidIdError, match=rf"^{field} {reason}"):
        ThreadKey(**{**good, field: bad})
    with pytest.raises(InvalidIdError, match=rf"^{field} {reason}"):
        ThreadKey.from_config({**good, field: bad})
    with pytest.raises(InvalidIdError, match=rf"^{field} {reason}"):
        ThreadKey.from_config({"configurable": {**good, field: bad}})


def test_the_error_is_a_state_error_and_a_value_error() -> None:
    with pytest.raises(StateError):
        ThreadKey("")
    with pytest.raises(ValueError, match="must not be empty"):
        ThreadKey("t1", "")


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"thread_id": "t1"}, ThreadKey("t1", DEFAULT_USER)),
        ({"thread_id": "t1", "user_id": None}, ThreadKey("t1", "default")),
        ({"configurable": {"thread_id": "t1", "user_id": None}}, ThreadKey("t1", "default")),
        ({"thread_id": 5, "user_id": 42}, ThreadKey("5", "42")),
        ({"thread_id": 0, "user_id": 0}, ThreadKey("0", "0")),
    ],
)
def test_config_ids(config: dict[str, Any], expected: ThreadKey) -> None:
    """Only a missing or None user is the default tenant; an int is its decimal text."""
    assert ThreadKey.from_config(config) == expected


@pytest.mark.parametrize("config", [{}, {"thread_id": None}, {"user_id": "alice"}])
def test_a_config_without_a_thread_id_is_refused(config: dict[str, Any]) -> None:
    with pytest.raises(InvalidIdError, match="the run config has no 'thread_id'"):
        ThreadKey.from_config(config)


@pytest.mark.parametrize(("bad", "reason"), BAD_IDS)
async def test_listing_refuses_a_bad_user_id(
    checkpointer: Checkpointer, bad: Any, reason: str
) -> None:
    with pytest.raises(InvalidIdError, match=rf"^user_id {reason}"):
        await checkpointer.alist_threads(bad)


def incompressible(seed: int) -> str:
    """``MAX_ID_LENGTH`` random four-byte characters (CJK ext. B): 1 KB that does not compress."""
    rnd = random.Random(seed)
    return "".join(chr(rnd.randrange(0x20000, 0x2A6E0)) for _ in range(MAX_ID_LENGTH))


async def test_ids_at_the_limit_work_on_every_backend(checkpointer: Checkpointer) -> None:
    """The worst case, 2 KB of key, fits Postgres' index entries (at most 2,704 bytes)."""
    key = ThreadKey(incompressible(1), incompressible(2))
    assert len(key.thread_id.encode()) == len(key.user_id.encode()) == 4 * MAX_ID_LENGTH
    assert (await checkpointer.asave(key, write(2))).version == 1
    stored = await checkpointer.aload(key)
    assert stored is not None and [m.text() for m in stored.context] == ["m0", "m1"]
    assert len(await checkpointer.alist_messages(key)) == 2
    [info] = await checkpointer.alist_threads(key.user_id)
    assert info.key == key
    assert len(await checkpointer.alist_checkpoints(key)) == 1
    assert await checkpointer.adelete_thread(key)


async def test_tenants_stay_apart(checkpointer: Checkpointer) -> None:
    """None and missing are "default"; "0" (from 0) is its own tenant."""
    for config in ({"thread_id": "t1"}, {"thread_id": "t2", "user_id": None}):
        await checkpointer.asave(ThreadKey.from_config(config), write())
    await checkpointer.asave(ThreadKey.from_config({"thread_id": "t3", "user_id": 0}), write())
    assert sorted(i.key.thread_id for i in await checkpointer.alist_threads()) == ["t1", "t2"]
    assert [i.key.thread_id for i in await checkpointer.alist_threads("0")] == ["t3"]


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"thread_id": "t1", "user_id": ""}, "user_id must not be empty"),
        ({"thread_id": "t1", "user_id": False}, "user_id must be a str, got bool False"),
        ({"thread_id": "t1", "user_id": 1.5}, "user_id must be a str, got float 1.5"),
        ({"thread_id": "x" * 300}, "thread_id is 300 characters long"),
        ({"configurable": {"thread_id": True}}, "thread_id must be a str, got bool True"),
    ],
)
async def test_a_run_with_a_bad_id_writes_nothing(
    checkpointer: Checkpointer, config: dict[str, Any], reason: str
) -> None:
    """Through the real runtime: the error comes before any save, in no tenant."""
    app = create_agent(FunctionModel(lambda request: "ok"), checkpointer=checkpointer)
    with pytest.raises(InvalidIdError, match=reason):
        await app.ainvoke({"messages": [("user", "hi")]}, config)
    assert await checkpointer.alist_threads() == []
    with pytest.raises(InvalidIdError, match=reason):
        await checkpointer.aget_state(config)
