"""A TCP port free on 127.0.0.1 right now, for a server a test or the benchmark starts.

The port is picked below the kernel's ephemeral range (net.ipv4.ip_local_port_range), never in
it. A port from the ephemeral range (what binding to port 0 gives) is also what every outgoing
connection of the machine is handed: between the pick and the server's bind, or while a server
killed on purpose is down before it starts again on the same port, one of the hundreds of
connections a test run opens could take it, and the server then fails with "address in use".
Below the range, only another listener that picked the same number could, and the pick is random
over thousands of ports and checked free.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 20000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_pick = random.SystemRandom()  # not the test's seeded `random`: parallel workers must differ


def free_port() -> int:
    highest = _ephemeral_start() - 1
    for _ in range(200):
        port = _pick.randint(LOWEST, highest)
        if _bindable(port):
            return port
    with socket.socket() as sock:  # every pick taken (not seen): the kernel's choice, as before
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral_start() -> int:
    try:
        start = int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default
    return start if start > LOWEST + 1000 else 32768


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
