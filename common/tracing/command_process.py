"""Spans in a command process (the forkserver's child that runs `process` commands).

The module sends the command span's traceparent with the request; the child makes it the
current context while the command runs, so whatever spans the command starts through the SDK's
usual API (`trace.get_tracer(__name__).start_as_current_span(...)`) are its children. The child
exports nothing: its spans, scrubbed as its log lines are, go back with the answer
(common/tracing/wire.py) and the module exports them with its own.
"""

from __future__ import annotations

import threading
from typing import Any

_collector: Any = None  # set up on the first traced request: a child of an untraced module never is
# What joining a trace needs, imported on the first traced request (an untraced child never
# loads OpenTelemetry), then kept: an import statement on every command costs more than the rest.
_attach: Any = None
_detach: Any = None
_context_of: Any = None


class _Untraced:
    """The block of an untraced request: nothing to join, no span to carry back."""

    __slots__ = ()

    def __enter__(self) -> tuple[()]:
        return ()

    def __exit__(self, *_: object) -> None:
        pass


_UNTRACED = _Untraced()


class _Joined:
    __slots__ = ("_traceparent", "_spans", "_token")

    def __init__(self, traceparent: str):
        self._traceparent = traceparent
        self._spans: list[dict[str, Any]] = []

    def __enter__(self) -> list[dict[str, Any]]:
        if _collector is None:
            _set_up()
        self._token = _attach(_context_of(self._traceparent))
        return self._spans

    def __exit__(self, *_: object) -> None:
        _detach(self._token)
        self._spans.extend(_collector.take())


def joined(traceparent: str | None) -> _Joined | _Untraced:
    """Run the block as part of the span `traceparent` names; what the block gets holds, after
    it, the spans that ended meanwhile (as wire data)."""
    return _UNTRACED if traceparent is None else _Joined(traceparent)


def _context_from(context: Any, span_context: Any, non_recording: Any, span_key: Any, flags_of: Any) -> Any:
    """The context the W3C propagator extracts from a traceparent alone, without its regular
    expressions and validation of a tracestate there is none of (a command a step)."""
    from common.tracing.carrier import parse_traceparent

    def context_of(traceparent: str) -> Any:
        parsed = parse_traceparent(traceparent)
        if parsed is None:
            return context()
        trace_id, span_id, flags = parsed
        return context({span_key: non_recording(span_context(trace_id, span_id, True, flags_of(flags)))})

    return context_of


def _set_up() -> None:
    global _collector, _attach, _detach, _context_of
    from opentelemetry import trace
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, ALWAYS_ON
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
    from opentelemetry.trace.propagation import _SPAN_KEY

    from common.tracing import state
    from common.tracing.current_step import otel_attach, otel_detach

    _attach, _detach = otel_attach, otel_detach
    _context_of = _context_from(Context, SpanContext, NonRecordingSpan, _SPAN_KEY, TraceFlags)
    collector = _Collector()
    # The module sampled the command's span already: its children follow that decision.
    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(collector)
    trace.set_tracer_provider(provider)
    state.install(provider.get_tracer(state.SCOPE), None)  # log lines carry trace and span ids (no emit: carried back)
    _collector = collector


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
