"""A real HTTP webhook receiver for tests: checks each POST's signature, records what it got (and
every attempt, taken or not), can answer 503 to the next few POSTs, and can go away (its port
closed) and come back on the same port."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.ports import free_port


@dataclass
class Delivery:
    body: dict[str, Any]
    raw: bytes
    headers: dict[str, str]
    signature_ok: bool


@dataclass
class WebhookReceiver:
    secret: str
    port: int = field(default_factory=free_port)
    deliveries: list[Delivery] = field(default_factory=list)
    attempts: int = 0
    refuse_next: int = 0  # answer 503 to this many POSTs before taking one
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/baton"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                expected = "sha256=" + hmac.new(receiver.secret.encode(), raw, hashlib.sha256).hexdigest()
                given = self.headers.get("X-Baton-Signature", "")
                with receiver._lock:
                    receiver.attempts += 1
                    refused = receiver.refuse_next > 0
                    if refused:
                        receiver.refuse_next -= 1
                    else:
                        receiver.deliveries.append(Delivery(json.loads(raw), raw, dict(self.headers.items()),
                                                            hmac.compare_digest(expected, given)))
                self.send_response(503 if refused else 204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Close the port: a POST is refused until start() again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def received(self) -> list[Delivery]:
        with self._lock:
            return list(self.deliveries)

    def attempted(self) -> int:
        with self._lock:
            return self.attempts
