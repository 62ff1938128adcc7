"""Run hooks: the seam where tracing, metrics, a server or a worker queue watch a run.

Subclass ``RunHooks``, override the methods you need (all async, all no-ops
by default) and pass instances to ``compile(hooks=[...])``. Each method gets
the run's ``RunControl`` (its run id, its thread, and ``stop()``), so a
server can keep the handle from ``on_run_start`` and stop the run later.

Hooks observe; they do not steer. One that raises is logged (logger
``tenxgraph.hooks``) and the run goes on, so a broken exporter never breaks
a conversation. They run on the run's event loop, between steps: keep them
quick, or hand the work to a queue.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tenxgraph.core.graph._run_control import RunControl
    from tenxgraph.storage.checkpointer.base import ThreadStamp

__all__ = ["HookCaller", "RunHooks"]

logger = logging.getLogger("tenxgraph.hooks")


class RunHooks:
    """No-op callbacks around a run; override the ones you need."""

    async def on_run_start(self, run: RunControl) -> None:
        """The run holds its thread and has applied its input; no node has run yet."""

    async def on_node_start(self, run: RunControl, node: str, step: int) -> None:
        """Node ``node`` is about to run as step ``step`` of the run."""

    async def on_node_end(
        self, run: RunControl, node: str, step: int, error: BaseException | None
    ) -> None:
        """Node ``node`` finished (``error`` None) or raised ``error``."""

    async def on_save(self, run: RunControl, node: str, stamp: ThreadStamp) -> None:
        """The thread was saved after ``node``; ``stamp`` is its new incarnation and version."""

    async def on_run_end(self, run: RunControl, status: str, error: BaseException | None) -> None:
        """The run ended with ``status`` (completed, interrupted, stopped, error) or ``error``."""


class HookCaller:
    """Calls every hook of a graph in order; a hook that raises is logged and skipped."""

    def __init__(self, hooks: Sequence[RunHooks]) -> None:
        self.hooks = tuple(hooks)
        """The hooks, in call order; the run loop tests this tuple before calling any."""

    async def run_started(self, run: RunControl) -> None:
        """Call every ``on_run_start``."""
        await self._call("on_run_start", lambda hook: hook.on_run_start(run))

    async def node_started(self, run: RunControl, node: str, step: int) -> None:
        """Call every ``on_node_start``."""
        await self._call("on_node_start", lambda hook: hook.on_node_start(run, node, step))

    async def node_ended(
        self, run: RunControl, node: str, step: int, error: BaseException | None
    ) -> None:
        """Call every ``on_node_end``."""
        await self._call("on_node_end", lambda hook: hook.on_node_end(run, node, step, error))

    async def saved(self, run: RunControl, node: str, stamp: ThreadStamp) -> None:
        """Call every ``on_save``."""
        await self._call("on_save", lambda hook: hook.on_save(run, node, stamp))

    async def run_ended(self, run: RunControl, status: str, error: BaseException | None) -> None:
        """Call every ``on_run_end``."""
        await self._call("on_run_end", lambda hook: hook.on_run_end(run, status, error))

    async def _call(self, name: str, pick: Callable[[RunHooks], Awaitable[None]]) -> None:
        for hook in self.hooks:
            try:
                await pick(hook)
            except Exception:
                logger.exception("run hook %s.%s raised", type(hook).__name__, name)
