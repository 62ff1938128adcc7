"""``BaseContextManager``: what the runtime calls to keep ``state.context`` within bounds."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TypeVar

from tenxgraph._sync import run_sync
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.overflow import drop_older_half, shrink_tool_results
from tenxgraph.errors import ConfigError

__all__ = ["BaseContextManager", "LocalContextManager"]

S = TypeVar("S", bound=AgentState)


class BaseContextManager(ABC):
    """Bounds the context window the model sees; the full history stays in the message log.

    A manager replaces ``state.context`` by a new, shorter list (never editing
    the list or the messages in place), keeps messages in their order, keeps
    every system message and the last user message, and never separates a
    tool call from its result. It may set ``state.context_summary``.

    The runtime calls ``atrim_context`` before each model call of an Agent
    with ``trim_context=True`` and when a run ends, and ``areduce_context``
    when the model reports that the request did not fit its window.
    """

    @abstractmethod
    async def atrim_context(self, state: S) -> S:
        """Bound ``state.context`` in place (a new list is assigned) and return ``state``."""

    def trim_context(self, state: S) -> S:
        """Sync twin of ``atrim_context``."""
        return run_sync(self.atrim_context(state))

    async def areduce_context(self, state: AgentState) -> bool:
        """Shrink the context further after a context-window overflow; True if it shrank.

        The default drops the older half of the user turns; with one turn
        left it truncates the largest tool outputs instead. False means
        nothing more can be removed, and the caller should give up.
        """
        return drop_older_half(state) or shrink_tool_results(state)

    def reduce_context(self, state: AgentState) -> bool:
        """Sync twin of ``areduce_context``."""
        return run_sync(self.areduce_context(state))


class LocalContextManager(BaseContextManager):
    """A manager that bounds the context without I/O (no model, no network).

    It implements one sync method, ``bound``; ``atrim_context`` and
    ``trim_context`` both call it directly, so the sync twin does not pay the
    sync-to-async bridge (three quarters of a fast trim's cost). A subclass
    that overrides ``atrim_context`` keeps its override on the sync path too.
    """

    @abstractmethod
    def bound(self, state: S) -> S:
        """Bound ``state.context`` in place (a new list is assigned) and return ``state``."""

    async def atrim_context(self, state: S) -> S:
        """Bound the context (see ``bound``)."""
        return self.bound(state)

    def trim_context(self, state: S) -> S:
        """Sync twin of ``atrim_context``: ``bound`` itself, unless that is overridden."""
        if type(self).atrim_context is LocalContextManager.atrim_context:
            return self.bound(state)
        return super().trim_context(state)


def check_count(owner: str, name: str, value: object, *, minimum: int = 1) -> None:
    """Raise ``ConfigError`` naming ``owner`` and ``name`` unless ``value`` is an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
