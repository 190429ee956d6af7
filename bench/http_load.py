"""A lean HTTP/1.1 load generator: keep-alive sockets sending one prepared POST each, in threads.

Why not httpx: on two cores the clients share the machine with the server they measure, and an
httpx request costs more CPU than a submission itself (the REST figure read 340/s with httpx
clients and 450-520/s with wrk against the same server). Here a request is a `sendall` of
prepared bytes and a parse of the status line and Content-Length: tens of microseconds, so the
figure is the server's.
"""

from __future__ import annotations

import json
import socket
import threading
import time


def post_load(port: int, path: str, body: dict, headers: dict[str, str], *, clients: int, seconds: float) -> dict:
    """POST `body` to 127.0.0.1:`port``path` from `clients` connections for `seconds`;
    answers per second, counted by status code."""
    payload = json.dumps(body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(payload)}\r\n{head}\r\n").encode() + payload  # fmt: skip
    stop = threading.Event()
    counts: list[dict[int, int]] = [{} for _ in range(clients)]

    def client(index: int) -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = _Answers(sock)
            while not stop.is_set():
                sock.sendall(request)
                status = reader.next_status()
                counts[index][status] = counts[index].get(status, 0) + 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    elapsed = time.perf_counter() - started
    by_status: dict[int, int] = {}
    for count in counts:
        for status, n in count.items():
            by_status[status] = by_status.get(status, 0) + n
    return {"seconds": elapsed, "by_status": by_status, "clients": clients}


class _Answers:
    """Reads one HTTP/1.1 response after another off a keep-alive socket (Content-Length bodies)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._buffer = b""

    def next_status(self) -> int:
        while b"\r\n\r\n" not in self._buffer:
            self._fill()
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(self._buffer) < length:
            self._fill()
        self._buffer = self._buffer[length:]
        return int(lines[0].split()[1])

    def _fill(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self._buffer += chunk
