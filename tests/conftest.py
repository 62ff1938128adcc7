"""Test-wide guards: no real network, only loopback and local sockets."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest


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
