"""A small forward HTTP proxy for tests: what a corporate proxy between baton and its collector
does with a plain-HTTP request (the origin named in the request line), and the URLs it carried.
An HTTP server in the test's own process, on a free port of 127.0.0.1."""

from __future__ import annotations

import http.client
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support import http_serving
from tests.support.ports import free_port

_HOP_BY_HOP = frozenset(("connection", "proxy-connection", "keep-alive", "host", "proxy-authorization"))


@dataclass
class HttpProxy:
    port: int = field(default_factory=free_port)
    carried: list[str] = field(default_factory=list)  # each request's absolute URL, in order
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        """What HTTP_PROXY names."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> HttpProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                target = urlsplit(self.path)  # a proxy's request line names the origin in full
                with proxy._lock:
                    proxy.carried.append(self.path)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                origin = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                try:
                    origin.request("POST", target.path or "/", body, headers)
                    answer = origin.getresponse()
                    data = answer.read()
                finally:
                    origin.close()
                http_serving.answer(self, answer.status, answer.getheader("Content-Type", "application/octet-stream"), data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http_serving.serve(self.port, Handler, "http-proxy")
        return self

    def stop(self) -> None:
        http_serving.stop(self._server)
        self._server = None

    def urls(self) -> list[str]:
        with self._lock:
            return list(self.carried)
