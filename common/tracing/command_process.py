"""Spans in a command process (the forkserver's child that runs `process` commands).

The module sends the command span's traceparent with the request; the child makes it the
current context while the command runs, so whatever spans the command starts through the SDK's
usual API (`trace.get_tracer(__name__).start_as_current_span(...)`) are its children. The child
exports nothing: its spans, scrubbed as its log lines are, go back with the answer
(common/tracing/wire.py) and the module exports them with its own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

_collector: Any = None  # set up on the first traced request: a child of an untraced module never is


@contextlib.contextmanager
def joined(traceparent: str | None) -> Iterator[list[dict[str, Any]]]:
    """Run the block as part of the span `traceparent` names; the list it yields holds, after
    the block, the spans that ended meanwhile (as wire data)."""
    spans: list[dict[str, Any]] = []
    if traceparent is None:
        yield spans
        return
    from common.tracing.current_step import otel_attach, otel_detach

    collector = _set_up()
    token = otel_attach(_context_of(traceparent))
    try:
        yield spans
    finally:
        otel_detach(token)
        spans.extend(collector.take())


def _context_of(traceparent: str) -> Any:
    """The context the W3C propagator extracts from the traceparent alone, without its
    regular expressions and validation of a tracestate there is none of (a command a step)."""
    from opentelemetry.context import Context
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
    from opentelemetry.trace.propagation import _SPAN_KEY

    from common.tracing.carrier import parse_traceparent

    parsed = parse_traceparent(traceparent)
    if parsed is None:
        return Context()
    trace_id, span_id, flags = parsed
    return Context({_SPAN_KEY: NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags)))})


def _set_up() -> Any:
    global _collector
    if _collector is None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import ParentBased, ALWAYS_ON

        from common.tracing import state

        _collector = _Collector()
        # The module sampled the command's span already: its children follow that decision.
        provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
        provider.add_span_processor(_collector)
        trace.set_tracer_provider(provider)
        state.install(provider.get_tracer(state.SCOPE), None)  # log lines carry trace and span ids (no emit: carried back)
    return _collector


class _Collector:
    """A span processor that keeps each ended span, scrubbed, as wire data until taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # a command's own threads may end spans too
        self._spans: list[dict[str, Any]] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def _on_ending(self, span: Any) -> None:
        pass

    def on_end(self, span: Any) -> None:
        from common.tracing.scrub import scrubbed
        from common.tracing.wire import to_wire

        data = to_wire(scrubbed(span))
        with self._lock:
            self._spans.append(data)

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            taken, self._spans = self._spans, []
        return taken

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
