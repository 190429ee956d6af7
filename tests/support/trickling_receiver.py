"""A real HTTP receiver on 127.0.0.1 that reads a POST, then answers one byte a second: either
its headers (`mode="headers"`: a status line, then a header line that never ends) or, after whole
headers, its body (`mode="body"`). It records each connection and when the client left, so a test
can tell a request cut off by its sender from one still being served."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field

TRICKLE_BYTES = 300  # seconds of trickling: far longer than any timeout a test sets


@dataclass
class Connection:
    bytes_sent: int = 0
    client_left: threading.Event = field(default_factory=threading.Event)


class TricklingReceiver:
    def __init__(self, mode: str = "headers"):
        assert mode in ("headers", "body")
        self.mode = mode
        self.connections: list[Connection] = []
        self._stop = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}/slow"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            connection = Connection()
            self.connections.append(connection)
            threading.Thread(target=self._serve, args=(client, connection), daemon=True).start()

    def _serve(self, client: socket.socket, connection: Connection) -> None:
        with client:
            try:
                self._read_request(client)
                if self.mode == "headers":
                    client.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                else:
                    client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                                   b"Content-Length: %d\r\n\r\n" % TRICKLE_BYTES)
                for _ in range(TRICKLE_BYTES):
                    if self._stop.wait(1.0):
                        break
                    client.sendall(b"a")
                    connection.bytes_sent += 1
            except OSError:  # the client closed or reset the connection
                pass
            finally:
                connection.client_left.set()

    @staticmethod
    def _read_request(client: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(4096)
            if not chunk:
                raise ConnectionResetError
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            chunk = client.recv(4096)
            if not chunk:
                raise ConnectionResetError
            body += chunk

    def stop(self) -> None:
        self._stop.set()
        self._server.close()
