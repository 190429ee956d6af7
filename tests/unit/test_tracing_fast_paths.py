"""The two places where baton's tracing reaches past OpenTelemetry's public API for speed (the
runtime context's variable, the batch processor's queue) are guarded by a fallback to the API.
With the pinned SDK the fast path must be the one taken, and agree with the API: an SDK upgrade
that moves either name fails here instead of silently costing every step the slow path."""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanContext

from common.tracing import current_step
from common.tracing.scrub import ScrubbingProcessor


class _Nothing(SpanExporter):
    def export(self, spans):  # noqa: ANN001 - the SDK's signature
        return SpanExportResult.SUCCESS


def test_the_current_context_is_read_and_set_through_the_runtime_variable():
    assert current_step.otel_current is not otel_context.get_current
    span = NonRecordingSpan(SpanContext(trace_id=7, span_id=9, is_remote=False))
    token = current_step.otel_attach(current_step.with_span(span))
    try:
        assert otel_context.get_current() is current_step.otel_current()
    finally:
        current_step.otel_detach(token)
    assert otel_context.get_current() is current_step.otel_current()


def test_a_steps_record_goes_straight_to_the_batch_processors_queue():
    batch = BatchSpanProcessor(_Nothing())
    try:
        emit = ScrubbingProcessor([batch]).steps_emit()
        assert emit != batch.on_end
        assert getattr(emit, "__self__", None) is batch._batch_processor
    finally:
        batch.shutdown()
