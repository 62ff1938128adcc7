"""Test-wide guards: no network, one line per missing service, Ctrl-C reaching children."""

from __future__ import annotations

import ipaddress
import signal
import socket
from typing import Any

import pytest

# The Ctrl-C tests send SIGINT to child processes. A runner started in the
# background (as CI may be) has SIGINT ignored, and an ignored signal stays
# ignored across exec, so the children would never see Ctrl-C; a handled one is
# reset to the default in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # unix socket path
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that tries to reach a host other than this machine."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(method: Any) -> Any:
        def connect(self: socket.socket, address: Any) -> Any:
            if not _is_local(address):
                raise ConnectionRefusedError(f"tests may not reach the network ({address!r})")
            return method(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))
    return


SERVICES = {
    "postgres": ("PostgreSQL", 5432),
    "redis": ("Redis", 6379),
}
"""Marker -> the shared server the marked tests talk to on 127.0.0.1."""


@pytest.fixture(scope="session")
def _reachable() -> dict[str, bool]:
    """Which shared servers answered, checked once per session (filled lazily)."""
    return {}


@pytest.fixture(autouse=True)
def _require_services(request: pytest.FixtureRequest, _reachable: dict[str, bool]) -> None:
    """A test marked with a service fails with one line naming it when that server is down."""
    for marker, (name, port) in SERVICES.items():
        if request.node.get_closest_marker(marker) is None:
            continue
        if marker not in _reachable:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                _reachable[marker] = True
            except OSError:
                _reachable[marker] = False
        if not _reachable[marker]:
            pytest.fail(
                f"{name} is not reachable on 127.0.0.1:{port}: start it with `make services` "
                "(scripts/services.sh), which `make check` runs first",
                pytrace=False,
            )
