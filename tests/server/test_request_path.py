"""What every request pays on its way to a route: no thread pool hand-off for a dependency.

FastAPI runs a sync dependency in its thread pool (a hand-off to a thread and
back on every request that names it); the app's dependencies read the request
and the app's context, so each is ``async``. A streamed run solves one
dependency for its context, caller and message format (``RunCaller``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute


def _routes() -> Iterator[APIRoute]:
    """The routes of every router the app includes (its health routes have no dependency)."""
    from tenxgraph.server import (
        _metrics,
        assistants,
        crons,
        extras,
        remote_tools,
        runs,
        store,
        thread_protocol,
        thread_stream,
        threads,
        traces,
    )

    modules = [runs, remote_tools, _metrics, assistants, threads, thread_stream, thread_protocol]
    for module in [*modules, crons, store, extras, traces]:
        yield from (route for route in module.router.routes if isinstance(route, APIRoute))


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for dependency in dependant.dependencies:
        yield dependency
        yield from _dependencies(dependency)


def test_no_dependency_of_the_app_runs_in_the_thread_pool() -> None:
    routes = list(_routes())
    assert any(route.path == "/threads/{thread_id}/runs/stream" for route in routes)
    sync = {
        (route.path, getattr(dependency.call, "__name__", repr(dependency.call)))
        for route in routes
        for dependency in _dependencies(route.dependant)
        if dependency.call is not None
        and not inspect.iscoroutinefunction(dependency.call)
        and not inspect.isasyncgenfunction(dependency.call)
    }
    assert sync == set()


@pytest.mark.parametrize("path", ["/threads/{thread_id}/runs/stream", "/runs/stream"])
def test_a_streamed_run_solves_one_dependency(path: str) -> None:
    (route,) = [r for r in _routes() if r.path == path and "POST" in r.methods]
    assert [d.call.__name__ for d in route.dependant.dependencies if d.call] == ["_caller"]


def test_the_run_routes_a_client_waits_on_are_tried_first() -> None:
    """FastAPI tries routes in order, each at a cost: the streamed and waited runs come first."""
    from tenxgraph.server.runs import router

    first = [(route.path, *sorted(route.methods)) for route in router.routes[:4]]
    assert first == [
        ("/threads/{thread_id}/runs/stream", "POST"),
        ("/threads/{thread_id}/runs/wait", "POST"),
        ("/runs/stream", "POST"),
        ("/runs/wait", "POST"),
    ]
