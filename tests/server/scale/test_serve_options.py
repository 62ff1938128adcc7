"""The scale-out options of ``tenxgraph serve`` become the workers' environment variables."""

from __future__ import annotations

import argparse

import pytest

from tenxgraph.cli.serve import add_serve_command, serve_environ
from tenxgraph.errors import TenxGraphError


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_command(parser.add_subparsers())
    return parser.parse_args(["serve", "app:graph", "--postgres", "postgresql://x/db", *argv])


def test_given_options_are_set_and_others_left_to_the_environment() -> None:
    env = serve_environ(_args("--consumers", "8", "--run-lease", "5", "--log-json"))
    assert env["TENXGRAPH_SERVE_CONSUMERS"] == "8"
    assert env["TENXGRAPH_SERVE_RUN_LEASE"] == "5.0"
    assert env["TENXGRAPH_SERVE_LOG_FORMAT"] == "json"
    plain = serve_environ(_args())
    assert not {"TENXGRAPH_SERVE_CONSUMERS", "TENXGRAPH_SERVE_RUN_LEASE"} & set(plain)


@pytest.mark.parametrize("argv", [("--consumers", "0"), ("--run-lease", "-1")])
def test_a_bad_value_is_refused_naming_the_option(argv: tuple[str, str]) -> None:
    with pytest.raises(TenxGraphError, match=argv[0]):
        serve_environ(_args(*argv))


@pytest.mark.parametrize(
    ("consumers", "sizes"), [(1, (2, 2)), (30, (3, 2)), (100, (10, 4)), (1000, (10, 4))]
)
def test_pool_sizes_follow_the_consumers_within_bounds(
    consumers: int, sizes: tuple[int, int]
) -> None:
    from tenxgraph.server._scale_out import pool_sizes

    assert pool_sizes(consumers) == sizes


async def test_a_worker_on_postgres_sizes_its_pools_by_its_consumers() -> None:
    from tenxgraph.server.app import app_from_env

    from .conftest import PG_DSN

    app = app_from_env(
        {
            "TENXGRAPH_SERVE_GRAPH": "tests.server.scale.scale_graph:graph",
            "TENXGRAPH_SERVE_POSTGRES": PG_DSN,
            "TENXGRAPH_SERVE_NO_AUTH": "1",
            "TENXGRAPH_SERVE_CONSUMERS": "20",
        }
    )
    checkpointer = app.state.context.graph.checkpointer
    queue = app.state.context.state["runs"].queue
    try:
        assert checkpointer._db._pool._max_size == 2  # opened on first use: nothing opened here
        assert queue._db._pool._max_size == 2
    finally:
        await checkpointer.aclose()
        await queue.aclose()
