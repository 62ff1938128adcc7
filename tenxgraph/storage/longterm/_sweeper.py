"""The memory store's background sweeper: expired items deleted without waiting for a read.

Expired items are invisible at once, but their rows stay until something
deletes them. With ``sweep_interval=`` a store runs a daemon thread that
calls ``asweep_expired(sweep_limit)`` every ``sweep_interval`` seconds,
so each sweep's work (one bounded delete) stays small whatever piles up;
a sweep that deleted a full ``sweep_limit`` runs the next one at once.

**Decision: a thread, not a task on the caller's loop.** A store is often
used only through its sync methods, whose private loop runs only during a
call: a task there would sweep only while the app calls the store. Each
sweep runs its own short ``asyncio.run`` in the thread; the backends'
primitives are safe across threads (SQLite and Postgres through their
database objects, ``InMemoryStore`` under its lock).

The thread starts with the store's first call (``ensure``, also after an
``aclose``) and ``aclose`` stops it, waiting for a sweep in progress; it
holds the store weakly, so a store dropped without ``aclose`` ends it too.
A sweep that fails (a database down) is logged and the next one tried.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from typing import TYPE_CHECKING

from tenxgraph.errors import ConfigError

if TYPE_CHECKING:
    from tenxgraph.storage.longterm.base import MemoryStore

__all__ = ["Sweeper"]

_log = logging.getLogger("tenxgraph.storage.longterm")


class Sweeper:
    """One store's sweeper thread (inert without an interval)."""

    def __init__(self, store: MemoryStore, interval: float | None, limit: int) -> None:
        if interval is not None and (
            isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0
        ):
            raise ConfigError(f"sweep_interval must be seconds > 0 or None, got {interval!r}")
        if type(limit) is not int or not 1 <= limit <= 1 << 20:
            raise ConfigError(f"sweep_limit must be an int from 1 to {1 << 20}, got {limit!r}")
        self._store = weakref.ref(store)
        self.interval = interval
        self.limit = limit
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._guard = threading.Lock()

    def ensure(self) -> None:
        """Start the thread if the store has an interval and it is not running."""
        if self.interval is None or self._thread is not None:
            return
        with self._guard:
            if self._thread is None:
                self._stop = threading.Event()
                self._thread = threading.Thread(
                    target=_sweep,
                    args=(self._store, self._stop, self.interval, self.limit),
                    name="tenxgraph-memory-sweeper",
                )
                self._thread.daemon = True
                self._thread.start()

    async def astop(self) -> None:
        """Stop the thread and wait for a sweep in progress to end."""
        with self._guard:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            await asyncio.to_thread(thread.join)


def _sweep(
    store: weakref.ref[MemoryStore], stop: threading.Event, interval: float, limit: int
) -> None:
    """The thread: a bounded sweep every ``interval`` until stopped or the store is gone."""
    wait = interval
    while not stop.wait(wait):
        alive = store()
        if alive is None:
            return
        try:
            deleted = asyncio.run(alive.asweep_expired(limit))
        except Exception:
            _log.warning("memory store sweep failed; the next one is tried", exc_info=True)
            deleted = 0
        del alive
        wait = 0.0 if deleted >= limit else interval
