"""tests/support/ports.py: a server's port is never one the kernel hands to outgoing connections."""

from __future__ import annotations

import socket

from tests.support.ports import LOWEST, _ephemeral_start, free_port


def test_free_ports_are_below_the_ephemeral_range_and_bindable():
    ports = {free_port() for _ in range(50)}
    assert all(LOWEST <= port < _ephemeral_start() for port in ports)
    assert len(ports) > 40  # random picks, not one port again and again
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))
