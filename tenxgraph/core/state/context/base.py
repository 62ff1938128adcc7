"""``BaseContextManager``: what the runtime calls to keep ``state.context`` within bounds."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import TypeVar

from tenxgraph._sync import run_sync
from tenxgraph.core.state.agent_state import AgentState
from tenxgraph.core.state.context.overflow import drop_older_half, drop_older_half_of_turn
from tenxgraph.errors import ConfigError

__all__ = ["BaseContextManager", "LocalContextManager", "check_budget", "check_count"]

logger = logging.getLogger("tenxgraph.context")

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

    Token budgets may be given as a fraction of the model's context window
    (a float in (0, 1]): the window is ``context_window`` when the manager
    was given one, else the one the Agent's model reports
    (``ChatModel.context_window``), which the Agent tells the manager before
    each trim (``use_model_window``). ``proactive_at`` (a fraction of that
    window) makes the Agent reduce the request before sending it when its
    estimated size passes that share, instead of waiting for the provider
    to refuse it.
    """

    context_window: int | None = None
    """The window token fractions refer to, when given to the manager (None: the model's)."""
    model_window: int | None = None
    """The window of the model that last asked for a trim (set by the Agent)."""
    proactive_at: float | None = None
    """Reduce before a request whose estimate passes this fraction of the window (None: off)."""

    def use_model_window(self, window: int | None) -> None:
        """Remember the window of the model about to be called (the Agent calls this)."""
        if window is not None:
            self.model_window = window

    def window(self) -> int | None:
        """The window token fractions refer to: ``context_window``, else the model's."""
        return self.context_window or self.model_window

    def tokens_for(self, name: str, budget: float | None) -> int | None:
        """``budget`` in tokens: an int as is, a fraction of ``window()``; None when unknown.

        A fraction with no window known yet disables that limit, with a
        warning (once per manager), rather than guessing a window.
        """
        if budget is None or isinstance(budget, int):
            return budget
        window = self.window()
        if window is None:
            if not getattr(self, "_warned_no_window", False):
                self._warned_no_window = True
                logger.warning(
                    "%s: %s=%s is a fraction of the model's context window, which is not "
                    "known yet (pass context_window= to the manager or the model); the "
                    "limit is off until it is",
                    type(self).__name__,
                    name,
                    budget,
                )
            return None
        return max(1, int(window * budget))

    @abstractmethod
    async def atrim_context(self, state: S) -> S:
        """Bound ``state.context`` in place (a new list is assigned) and return ``state``."""

    def trim_context(self, state: S) -> S:
        """Sync twin of ``atrim_context``."""
        return run_sync(self.atrim_context(state))

    async def areduce_context(self, state: AgentState) -> bool:
        """Shrink the context further after a context-window overflow; True if it shrank.

        The default drops the older half of the user turns; with one turn
        left, the older half of that turn's tool exchanges (its question and
        last exchange stay). False means nothing more can be removed. The
        overflow loop shortens tool outputs and drops old media before it
        asks the manager (``tenxgraph.core.state.context.overflow``).
        """
        return drop_older_half(state) or drop_older_half_of_turn(state)

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


def check_budget(owner: str, name: str, value: object) -> None:
    """Raise ``ConfigError`` unless ``value`` is None, an int >= 1 or a float in (0, 1]."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return
    if isinstance(value, float) and 0 < value <= 1:
        return
    raise ConfigError(
        f"{owner}: {name} must be a token count (an integer >= 1), a fraction of the "
        f"model's context window (a float in (0, 1]) or None, got {value!r}"
    )


def check_window(owner: str, context_window: object, proactive_at: object) -> None:
    """Raise ``ConfigError`` for a bad ``context_window`` or ``proactive_at``."""
    if context_window is not None:
        check_count(owner, "context_window", context_window)
    if proactive_at is not None and not (isinstance(proactive_at, float) and 0 < proactive_at <= 1):
        raise ConfigError(
            f"{owner}: proactive_at must be a fraction of the context window (a float in "
            f"(0, 1]) or None, got {proactive_at!r}"
        )


def check_count(owner: str, name: str, value: object, *, minimum: int = 1) -> None:
    """Raise ``ConfigError`` naming ``owner`` and ``name`` unless ``value`` is an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
