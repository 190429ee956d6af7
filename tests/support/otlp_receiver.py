"""A small OTLP/HTTP trace receiver for tests and the benchmark: what an OpenTelemetry collector
would get from baton's exporters, decoded from the real `ExportTraceServiceRequest` protobufs
(opentelemetry-proto), kept as plain spans to search. No collector process: an HTTP server in
the test's own process, on a free port of 127.0.0.1."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support import http_serving
from tests.support.ports import free_port

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass(frozen=True)
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root
    kind: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    links: list[tuple[str, str]]  # (trace id, span id)
    events: list[tuple[str, dict[str, Any]]]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    scope: str
    start_ns: int
    end_ns: int

    def texts(self) -> list[str]:
        """Every string in it: what a secret must not be found in."""
        found = [self.name, self.status_message, *map(str, self.attributes.values()), *map(str, self.resource.values())]
        for name, attributes in self.events:
            found += [name, *map(str, attributes.values())]
        return found


@dataclass
class OtlpReceiver:
    port: int = field(default_factory=free_port)
    spans: list[Span] = field(default_factory=list)
    requests: int = 0
    decode: bool = True  # False: only count requests (the benchmark's receiver does no more)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT names (the exporter adds /v1/traces)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a collector does

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                ok = self.path == "/v1/traces"
                if ok:
                    receiver._take(raw)
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b""
                http_serving.answer(self, 200 if ok else 404, "application/x-protobuf", answer)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http_serving.serve(self.port, Handler, "otlp-receiver")
        return self

    def stop(self) -> None:
        http_serving.stop(self._server)
        self._server = None

    def _take(self, raw: bytes) -> None:
        if not self.decode:
            with self._lock:
                self.requests += 1
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(raw)
        found = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(Span(
                        name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(), kind=KINDS.get(span.kind, str(span.kind)),
                        attributes=_attributes(span.attributes), resource=resource,
                        links=[(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
                        events=[(event.name, _attributes(event.attributes)) for event in span.events],
                        status_code=span.status.code, status_message=span.status.message,
                        scope=scope_spans.scope.name, start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                    ))
        with self._lock:
            self.requests += 1
            self.spans.extend(found)

    def trace(self, trace_id: str) -> list[Span]:
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def all(self) -> list[Span]:
        with self._lock:
            return list(self.spans)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind) if kind else None
