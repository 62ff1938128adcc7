"""Test kits for code that plugs into tenxgraph: the suites our own backends and adapters pass.

- ``CheckpointerContract`` (``tenxgraph.testing.checkpointers``): the
  checkpointer conformance suite as a pytest base class. Subclass it in a
  test module as ``TestMyCheckpointer`` and give it a ``make_checkpointer``
  fixture returning a factory ``(**options) -> Checkpointer`` for your
  backend; pytest then runs every test of the contract against it (see that
  module for an example).
- ``ThreadLeasesContract`` (``tenxgraph.testing.thread_leases``): the
  conformance suite of the ``ThreadLeases`` contract (leases and the fence
  they put on saves), for a checkpointer that offers leases too; same
  ``make_checkpointer`` fixture as ``CheckpointerContract``.
- ``MediaStoreContract`` (``tenxgraph.testing.media_stores``): the media
  store conformance suite, used the same way with a ``make_media_store``
  fixture returning ``(**options) -> MediaStore``.
- ``MemoryStoreContract`` (``tenxgraph.testing.memory_stores``): the
  long-term memory store conformance suite, used the same way with a
  ``make_memory_store`` fixture returning ``(**options) -> MemoryStore``.
- ``ChatModelContract`` (``tenxgraph.testing.chat_models``): the contract
  every chat-model adapter meets (text, streamed deltas, a tool call, token
  usage, HTTP errors), as a pytest base class run against the replay server.
- ``ReplayServer`` and ``chat_chunk`` (``tenxgraph.testing.replay``): a local
  HTTP server that replays queued provider responses, so an adapter is
  tested through the provider's real SDK with no network.
- ``served`` (``tenxgraph.testing.server``): a real uvicorn server on a free
  port for the length of a ``with`` block, serving a graph or an app made by
  ``tenxgraph.server.create_app`` (needs the ``server`` extra), so tests of
  code that calls a tenxgraph server speak real HTTP.

The suites need pytest and pytest-asyncio installed (the ``testing`` extra:
``pip install tenxgraph[testing]``); the replay server needs only the
standard library. Importing this package imports neither: each name is
loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tenxgraph.testing.chat_models import ChatModelContract
    from tenxgraph.testing.checkpointers import CheckpointerContract, MakeCheckpointer
    from tenxgraph.testing.media_stores import MakeMediaStore, MediaStoreContract
    from tenxgraph.testing.memory_stores import MakeMemoryStore, MemoryStoreContract
    from tenxgraph.testing.replay import ReplayServer, chat_chunk
    from tenxgraph.testing.thread_leases import ThreadLeasesContract

__all__ = [
    "ChatModelContract",
    "CheckpointerContract",
    "MakeCheckpointer",
    "MakeMediaStore",
    "MakeMemoryStore",
    "MediaStoreContract",
    "MemoryStoreContract",
    "ReplayServer",
    "ThreadLeasesContract",
    "chat_chunk",
]

_LAZY = {
    "ChatModelContract": "tenxgraph.testing.chat_models",
    "CheckpointerContract": "tenxgraph.testing.checkpointers",
    "MakeCheckpointer": "tenxgraph.testing.checkpointers",
    "MakeMediaStore": "tenxgraph.testing.media_stores",
    "MediaStoreContract": "tenxgraph.testing.media_stores",
    "MakeMemoryStore": "tenxgraph.testing.memory_stores",
    "MemoryStoreContract": "tenxgraph.testing.memory_stores",
    "ReplayServer": "tenxgraph.testing.replay",
    "ThreadLeasesContract": "tenxgraph.testing.thread_leases",
    "chat_chunk": "tenxgraph.testing.replay",
}
_SUITES = (
    "tenxgraph.testing.chat_models",
    "tenxgraph.testing.checkpointers",
    "tenxgraph.testing._checkpointer_base",
    "tenxgraph.testing._checkpointer_rewind",
    "tenxgraph.testing._checkpointer_threads",
    "tenxgraph.testing.media_stores",
    "tenxgraph.testing.memory_stores",
    "tenxgraph.testing._thread_leases",
)
"""Modules whose ``assert`` statements pytest should rewrite, for its detailed failure reports."""


def __getattr__(name: str) -> Any:
    """Import a suite or the replay server on first access."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rewrite_asserts() -> None:
    """Have pytest rewrite the suites' asserts, as it does a test module's (when pytest runs)."""
    import sys

    if "pytest" in sys.modules:
        import pytest

        pytest.register_assert_rewrite(*_SUITES)


_rewrite_asserts()
