"""``SyncClient``: the same client for code without an event loop.

Each method here is its async twin run to completion through
``tenxgraph._sync`` (the library's one sync bridge), and each stream is the
async stream iterated from sync code, so there is no second implementation of
any request, stream, reconnect or remote tool. ``blocking`` and
``blocking_iter`` turn an async method into its sync form and keep its
signature for type checkers and ``help()``.

Remote tool handlers given to a sync stream may be plain functions (they run
in a worker thread) or coroutine functions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from tenxgraph._sync import _in_running_loop, iterate_sync, run_sync
from tenxgraph.client._assistants import Assistants
from tenxgraph.client._client import Client
from tenxgraph.client._media import Media
from tenxgraph.client._runs import Runs
from tenxgraph.client._threads import Threads
from tenxgraph.client._transport import Transport

__all__ = ["SyncAssistants", "SyncClient", "SyncMedia", "SyncRuns", "SyncThreads"]

P = ParamSpec("P")
T = TypeVar("T")
A = TypeVar("A")


class blocking(Generic[A, P, T]):
    """Class attribute: the async method of ``self._async`` run to completion."""

    def __init__(self, method: Callable[Concatenate[A, P], Coroutine[Any, Any, T]]) -> None:
        self.method = method

    @overload
    def __get__(self, obj: None, owner: type) -> blocking[A, P, T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, T]: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        target: A = obj._async  # type: ignore[attr-defined]
        transport: Transport = obj._async._transport  # type: ignore[attr-defined]
        method = self.method

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            coroutine = method(target, *args, **kwargs)
            if _in_running_loop():  # run_sync runs it on a loop closed right after
                return run_sync(_transient(transport, coroutine))
            return run_sync(coroutine)

        call.__doc__, call.__name__ = method.__doc__, method.__name__
        return call


class blocking_iter(Generic[A, P, T]):
    """Class attribute: the async iterator of ``self._async``'s method, iterated from sync code."""

    def __init__(self, method: Callable[Concatenate[A, P], AsyncIterator[T]]) -> None:
        self.method = method

    @overload
    def __get__(self, obj: None, owner: type) -> blocking_iter[A, P, T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, Iterator[T]]: ...
    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        target: A = obj._async  # type: ignore[attr-defined]
        transport: Transport = obj._async._transport  # type: ignore[attr-defined]
        method = self.method

        def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
            iterator = method(target, *args, **kwargs)
            if _in_running_loop():  # iterate_sync drains it on a loop closed right after
                return iterate_sync(_transient_iter(transport, iterator))
            return iterate_sync(iterator)

        call.__doc__, call.__name__ = method.__doc__, method.__name__
        return call


async def _transient(transport: Transport, coroutine: Coroutine[Any, Any, T]) -> T:
    transport.transient()
    return await coroutine


async def _transient_iter(transport: Transport, iterator: AsyncIterator[T]) -> AsyncIterator[T]:
    transport.transient()
    async for item in iterator:
        yield item


class SyncAssistants:
    """The ``/assistants`` endpoints (sync): the methods of ``Assistants``."""

    def __init__(self, assistants: Assistants) -> None:
        self._async = assistants

    search = blocking(Assistants.search)
    get_tools = blocking(Assistants.get_tools)


class SyncThreads:
    """The ``/threads`` endpoints (sync): the methods of ``Threads``."""

    def __init__(self, threads: Threads) -> None:
        self._async = threads

    create = blocking(Threads.create)
    get = blocking(Threads.get)
    delete = blocking(Threads.delete)
    search = blocking(Threads.search)
    get_state = blocking(Threads.get_state)
    update_state = blocking(Threads.update_state)
    get_history = blocking(Threads.get_history)
    get_log = blocking(Threads.get_log)
    get_window = blocking(Threads.get_window)
    call_tool = blocking(Threads.call_tool)
    rollback = blocking(Threads.rollback)


class SyncRuns:
    """The ``/threads/{thread_id}/runs`` endpoints (sync): the methods of ``Runs``."""

    def __init__(self, runs: Runs) -> None:
        self._async = runs

    stream = blocking_iter(Runs.stream)
    join_stream = blocking_iter(Runs.join_stream)
    wait = blocking(Runs.wait)
    create = blocking(Runs.create)
    get = blocking(Runs.get)
    list = blocking(Runs.list)
    join = blocking(Runs.join)
    cancel = blocking(Runs.cancel)
    tool_results = blocking(Runs.tool_results)


class SyncMedia:
    """The ``/media`` endpoints (sync): the methods of ``Media``."""

    def __init__(self, media: Media) -> None:
        self._async = media

    put = blocking(Media.put)
    get = blocking(Media.get)


class SyncClient:
    """Talks to a tenxgraph server from sync code; the arguments are ``Client``'s."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._async = Client(url, api_key=api_key, headers=headers, timeout=timeout)
        self.assistants = SyncAssistants(self._async.assistants)
        """Find the served graph's assistant; list its tools."""
        self.threads = SyncThreads(self._async.threads)
        """Create, read, search and delete threads; their state, log and window; direct
        tool calls; rollback of an unfinished turn."""
        self.runs = SyncRuns(self._async.runs)
        """Stream, wait for, start, join and cancel runs."""
        self.media = SyncMedia(self._async.media)
        """Store files on the server for messages to refer to, and read them back."""

    info = blocking(Client.info)

    def close(self) -> None:
        """Close the kept-alive connections."""
        run_sync(self._async.aclose())

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
