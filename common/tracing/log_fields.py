"""`trace_id` and `span_id` on every log line written inside a span, so a line leads to its trace
and a trace to its lines. One attribute read per line while tracing is off."""

from __future__ import annotations

from typing import Any

from common.tracing import state


def add_trace_ids(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    if state.tracer is None:
        return event
    from opentelemetry.trace import get_current_span

    context = get_current_span().get_span_context()
    if context.is_valid:
        event["trace_id"] = format(context.trace_id, "032x")
        event["span_id"] = format(context.span_id, "016x")
    return event
