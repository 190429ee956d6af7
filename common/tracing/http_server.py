"""A server span for each request to the REST API (ASGI middleware), after the semantic
conventions' http.* and url.* attributes. A W3C `traceparent` header makes the request, and the
task it submits, part of the caller's trace. Off (no span, one attribute read) while tracing is.

Only the path is recorded, never the query string (a client may put a token in it) or a header;
and a callback's path without its token (the token is the caller's credential).
"""

from __future__ import annotations

from typing import Any

from common.tracing import state

PREFIX = "/api/"  # the console's files and the health probes are not traced
CALLBACKS = "/api/v1/callbacks/"  # its token is a credential: recorded as ***
# FastAPI's own OpenTelemetry (recent versions turn it on with the global provider): it records the
# query string, validation errors with the values they refused, and exception messages, any of
# which may quote a secret; and it would be a second server span around baton's.
FRAMEWORK_TELEMETRY_OFF = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}


def framework_telemetry_off(app_class: Any) -> dict[str, Any]:
    """The keyword that turns FastAPI's own telemetry off, where its version has it."""
    import inspect

    known = "telemetry" in inspect.signature(app_class.__init__).parameters
    return {"telemetry": dict(FRAMEWORK_TELEMETRY_OFF)} if known else {}


class TracingMiddleware:
    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        tracer = state.tracer
        if tracer is None or scope["type"] != "http" or not scope.get("path", "").startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        from opentelemetry.trace import SpanKind, Status, StatusCode

        from common.tracing.propagation import extract_headers

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())
                   if k.lower() in (b"traceparent", b"tracestate")}  # fmt: skip
        method = scope.get("method", "")
        status = 500  # what the client gets if the app raises before answering

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        path = scope.get("path", "")
        attributes = {"http.request.method": method, "url.path": CALLBACKS + "***" if path.startswith(CALLBACKS) else path,
                      "url.scheme": scope.get("scheme", "http")}  # fmt: skip
        with tracer.start_as_current_span(method, context=extract_headers(headers), kind=SpanKind.SERVER,
                                          attributes=attributes, record_exception=False,
                                          set_status_on_exception=False) as span:  # fmt: skip
            try:
                await self.app(scope, receive, tracked_send)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route is not None:
                    span.update_name(f"{method} {route}")
                    span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))
