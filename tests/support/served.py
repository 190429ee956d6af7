"""An ASGI app served by uvicorn in a thread, on 127.0.0.1 and a port the kernel picks."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from tests.support.cluster import STATE_DEADLINE


@contextlib.contextmanager
def served(app: Any) -> Iterator[str]:
    """uvicorn in a thread on a port the kernel picks (bound here, so no race for it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="served-uvicorn", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + STATE_DEADLINE  # imports and a first request at load 20-45
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
