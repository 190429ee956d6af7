"""One HTTP POST bounded as a whole: connecting, sending, the status line, the headers and the
body must all finish within `timeout` seconds, however the receiver trickles them.

A socket timeout bounds each read, not the request: a receiver that sends one byte a second
never trips it. So a watchdog timer severs the connection at the deadline, which ends whatever
read or write is blocked (plain or TLS alike), and the POST counts as timed out.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse

MAX_RESPONSE_BYTES = 64 * 1024  # the answer's body is only drained, never used
USER_AGENT = "baton-webhooks"


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST `body`; the HTTP status. Raises OSError (TimeoutError past the deadline, refused,
    reset, unreachable) or ValueError (not an http(s) URL)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http(s) URL")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    watchdog = _Watchdog(connection, timeout)
    try:
        connection.connect()
        if watchdog.fired:  # the deadline passed while connecting: the socket came too late to sever
            raise TimeoutError
        connection.request("POST", path, body=body, headers={"User-Agent": USER_AGENT, **headers,
                                                             "Connection": "close"})
        response = connection.getresponse()
        response.read(MAX_RESPONSE_BYTES)
        status = int(response.status)
    except (OSError, http.client.HTTPException) as exc:
        if watchdog.fired:
            raise TimeoutError(f"no complete answer within {timeout} s") from None
        if isinstance(exc, OSError):
            raise
        raise ConnectionError(type(exc).__name__) from None  # a malformed or cut-off answer
    finally:
        watchdog.cancel()
        connection.close()
    if watchdog.fired:  # severed while the end of the body was read: incomplete, so not taken
        raise TimeoutError(f"no complete answer within {timeout} s")
    return status


class _Watchdog:
    """Severs the connection's socket once `timeout` seconds have passed."""

    def __init__(self, connection: http.client.HTTPConnection, timeout: float):
        self._connection = connection
        self._lock = threading.Lock()
        self._done = False
        self.fired = False
        self._timer = threading.Timer(timeout, self._sever)
        self._timer.daemon = True
        self._timer.start()

    def _sever(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            sock = self._connection.sock
        if sock is not None:
            try:  # the plain socket's shutdown, also under TLS: it wakes a blocked read or write
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass  # closed already

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()
