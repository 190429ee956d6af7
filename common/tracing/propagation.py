"""Between a span and the W3C text a document or a message carries (carrier.TraceContext)."""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, TraceFlags, get_current_span, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from common.tracing.carrier import TraceContext

W3C = TraceContextTextMapPropagator()


def context_of(trace: TraceContext | None) -> Context | None:
    """The context a span started under `trace` is a child of (None: a new trace)."""
    if trace is None:
        return None
    return W3C.extract({"traceparent": trace.TraceParent, "tracestate": trace.TraceState})


def trace_of(span: Span) -> TraceContext | None:
    """What a document or message carries to make later spans children of `span`."""
    carrier: dict[str, str] = {}
    W3C.inject(carrier, set_span_in_context(span))
    if "traceparent" not in carrier:
        return None
    return TraceContext(TraceParent=carrier["traceparent"], TraceState=carrier.get("tracestate", ""))


def traceparent_of(span: Span) -> str | None:
    carrier: dict[str, str] = {}
    W3C.inject(carrier, set_span_in_context(span))
    return carrier.get("traceparent")


def links_to(traceparent: str | None) -> list[Link]:
    """A link to the span `traceparent` names (none if it names none, or not validly)."""
    if not traceparent:
        return []
    context = get_current_span(W3C.extract({"traceparent": traceparent})).get_span_context()
    return [Link(context)] if context.is_valid else []


def current_links() -> list[Link]:
    """A link to the span current here (common/tracing/current_step.py), if there is one."""
    from common.tracing.current_step import ids

    current = ids()
    if current is None:
        return []
    context = get_current_span().get_span_context()
    if (context.trace_id, context.span_id) == current:
        return [Link(context)]
    return [Link(SpanContext(*current, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)))]


def same_trace(context: Context | None, trace: TraceContext) -> bool:
    """Whether the span current in `context` (or here) is in the trace `trace` names."""
    current = get_current_span(context).get_span_context()
    return current.is_valid and trace.TraceParent[3:35] == format(current.trace_id, "032x")


def extract_headers(headers: Any) -> Context:
    """The caller's trace context from HTTP headers (a mapping of lower-case names)."""
    return W3C.extract(headers)
