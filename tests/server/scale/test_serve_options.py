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
