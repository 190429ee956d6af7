"""A finished span as plain data, to cross a command process's pipe (pickled by multiprocessing),
and back. The SDK's span holds locks and bounded containers that do not pickle; its parts do.

The command process exports nothing itself: it sends the spans of each command back with the
command's answer, and the module's own processor exports them. No exporter thread and no HTTP
client per child, and nothing left unexported in a child killed at the module's stop.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags


def to_wire(span: ReadableSpan) -> dict[str, Any]:
    scope = span.instrumentation_scope
    return {
        "name": span.name,
        "context": _context(span.context),
        "parent": _context(span.parent),
        "kind": span.kind.value,
        "attributes": dict(span.attributes or {}),
        "events": [(e.name, dict(e.attributes or {}), e.timestamp) for e in span.events],
        "links": [(_context(link.context), dict(link.attributes or {})) for link in span.links],
        "status": (span.status.status_code.value, span.status.description),
        "start": span.start_time,
        "end": span.end_time,
        "scope": (scope.name, scope.version) if scope is not None else None,
    }


def from_wire(data: dict[str, Any], resource: Any) -> ReadableSpan:
    """The span `to_wire` sent, with this process's resource (the module's service name)."""
    code, description = data["status"]
    scope = data["scope"]
    return ReadableSpan(
        name=data["name"],
        context=_span_context(data["context"]),
        parent=_span_context(data["parent"]),
        resource=resource,
        attributes=data["attributes"],
        events=[Event(name, attributes, timestamp) for name, attributes, timestamp in data["events"]],
        links=[Link(_span_context(context), attributes) for context, attributes in data["links"]],
        kind=SpanKind(data["kind"]),
        status=Status(StatusCode(code), description),
        start_time=data["start"],
        end_time=data["end"],
        instrumentation_scope=InstrumentationScope(*scope) if scope is not None else None,
    )


def _context(context: SpanContext | None) -> tuple[int, int, int] | None:
    if context is None:
        return None
    return context.trace_id, context.span_id, int(context.trace_flags)


def _span_context(data: tuple[int, int, int] | None) -> SpanContext | None:
    if data is None:
        return None
    trace_id, span_id, flags = data
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
