"""What every part of the checkpointer contract shares: its fixtures and the version-only save."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from tenxgraph.core.state.ids import ThreadKey
from tenxgraph.core.state.message import Message
from tenxgraph.storage.checkpointer import Checkpointer, ThreadWrite

MakeCheckpointer = Callable[..., Checkpointer]
"""Opens a checkpointer of the backend under test: ``make_checkpointer(**options)``.

Every checkpointer one test makes shares that test's storage (a second
instance sees what the first saved), and the fixture closes them and removes
the storage when the test ends. The suite passes one option,
``keep_checkpoints``.
"""


class ContractBase:
    """The contract's fixtures; a backend's test class provides ``make_checkpointer``."""

    pytestmark = [pytest.mark.asyncio]

    @pytest.fixture
    def make_checkpointer(self) -> MakeCheckpointer:
        """Override this in your subclass: the factory of the backend under test."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `make_checkpointer` fixture returning "
            "a factory `(**options) -> Checkpointer`"
        )

    @pytest.fixture
    def checkpointer(self, make_checkpointer: MakeCheckpointer) -> Checkpointer:
        """A checkpointer of the backend under test, with default options."""
        return make_checkpointer()


def msg(text: str, role: Any = "user", **fields: Any) -> Message:
    """A text message."""
    return Message.text_message(text, role=role, **fields)


async def save(checkpointer: Checkpointer, key: ThreadKey, write: ThreadWrite) -> int:
    """Save ``write`` (its incarnation read from storage unless given); return the new version.

    Every save names the incarnation (the thread's identity) it was based on;
    tests about versions, windows or tenants are not about identity, so they
    save through this helper, which reads the current incarnation first.
    """
    if write.expected_version and write.expected_incarnation is None:
        stamp = await checkpointer.aversion(key)
        incarnation = "no-such-thread" if stamp is None else stamp.incarnation
        write = dataclasses.replace(write, expected_incarnation=incarnation)
    stamp = await checkpointer.asave(key, write)
    return stamp.version
