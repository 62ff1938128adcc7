"""The local replay server the adapter tests point the official SDKs at."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenxgraph.testing.replay import ReplayServer


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    """One server per module: starting and stopping one costs about half a second."""
    with ReplayServer() as replay:
        yield replay


@pytest.fixture
def server(replay: ReplayServer) -> Iterator[ReplayServer]:
    """The module's replay server, emptied for each test; every queued reply must be used."""
    replay.replies.clear()
    replay.requests.clear()
    yield replay
    assert not replay.replies, f"{len(replay.replies)} queued replies were never requested"
