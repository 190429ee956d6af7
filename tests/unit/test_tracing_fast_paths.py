"""The places where baton's tracing reaches past OpenTelemetry's public API for speed (the
runtime context's variable, the batch processor's queue, the exporter's transport) are guarded
by a fallback to the API. With the pinned SDK the fast path must be the one taken, and agree
with the API: an SDK upgrade that moves any of these names fails here instead of silently
costing every step the slow path. And a step's record, queued for export, is freed as soon as
it is exported: a reference cycle in it would leave it to the garbage collector."""

from __future__ import annotations

from opentelemetry import context as otel_context
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanContext

from common.engine.changes import AttemptResult
from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode
from common.tracing import attempts, current_step, state
from common.tracing.carrier import TraceContext
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


def test_a_steps_record_is_freed_without_the_garbage_collector(monkeypatch):
    import gc

    message = _traced_message()
    exported: list[object] = []
    monkeypatch.setattr(state, "emit", exported.append)
    monkeypatch.setattr(state, "emit_steps", exported.append)
    gc.collect()
    gc.disable()
    try:
        for kind in ("process", "thread"):
            attempt = attempts.begin(message, "m")
            with attempt.current():
                with attempt.child("claim"):
                    pass
                attempt.start_command(kind)
                with attempt.in_command():
                    pass
                attempt.command_ended(AttemptResult(ResultCode.OK))
                with attempt.child("commit"):
                    with attempt.child("sub-flow"):
                        pass
            attempt.end(AttemptResult(ResultCode.OK))
        assert len(exported) == 2
        del attempt
        exported.clear()  # what the exporter's thread does once the request is sent
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_steps_record_is_one_the_garbage_collector_stops_walking(monkeypatch):
    """Queued for export for up to seconds, a record would otherwise reach the collector's
    oldest generation, which every full collection walks whole."""
    import gc

    trace = TraceContext(TraceParent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                         Link="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01")  # fmt: skip
    message = StepMessage(TaskId="t-1", Cursor=0, Type=Phase.ROLLBACK, Module="m", Command="c", Timeout=1, Retry=0,
                          DispatchId="d-1", Attempt=2, Item=3, Trace=trace)  # fmt: skip
    exported: list[object] = []
    monkeypatch.setattr(state, "emit", exported.append)
    monkeypatch.setattr(state, "emit_steps", exported.append)

    class _Task:
        TaskType = "deploy"
        Steps = [type("_Step", (), {"Name": "prepare"})()]

    failed = AttemptResult(ResultCode.FAILED, "it broke", check_again=2.5, verified=("not_done", "why"))
    for kind in ("process", "thread"):
        attempt = attempts.begin(message, "m")
        with attempt.current():
            with attempt.child("claim"):
                pass
            attempt.claimed(_Task())  # type: ignore[arg-type]
            attempt.start_command(kind)
            with attempt.in_command():
                pass
            attempt.command_ended(failed)
            with attempt.child("commit"):
                pass
        attempt.end(failed)
    del attempt
    gc.collect()
    assert len(exported) == 2
    assert not any(gc.is_tracked(record) for record in exported)


def test_a_traceparent_read_once_says_the_same_the_next_time(monkeypatch):
    """begin keeps what a traceparent says by its text: a task's next steps carry the same."""
    monkeypatch.setattr(state, "emit", lambda span: None)
    monkeypatch.setattr(attempts, "_PARENTS", {})
    ids = "4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"

    def begun(flags: str, text: str | None = None):
        return attempts.begin(_traced_message(text or f"00-{ids}-{flags}"), "m")

    for _ in range(2):
        sampled = begun("01")
        assert (sampled.trace_id, sampled.task_span) == (0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7)
        assert sampled.trace_hex == "4bf92f3577b34da6a3ce929d0e0e4736"
        assert begun("00") is attempts.NO_ATTEMPT  # not sampled
        assert begun("01", "00-" + "0" * 32 + "-00f067aa0ba902b7-01") is attempts.NO_ATTEMPT  # not valid
    upper = begun("01", f"00-{ids.upper()}-01")
    assert upper.trace_hex == "4bf92f3577b34da6a3ce929d0e0e4736"


def test_a_commands_span_context_is_built_as_the_api_builds_it():
    from opentelemetry.trace import SpanContext, TraceFlags

    assert attempts._context is attempts._tuple_context
    ours = attempts._context(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B6)
    theirs = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B6, is_remote=False,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED))  # fmt: skip
    assert type(ours) is SpanContext and ours == theirs
    assert (ours.trace_id, ours.span_id, ours.is_remote, ours.trace_flags, ours.trace_state, ours.is_valid) == (
        theirs.trace_id, theirs.span_id, theirs.is_remote, theirs.trace_flags, theirs.trace_state, theirs.is_valid)


def test_a_steps_record_reaches_every_processor_behind_the_scrubbing_one(monkeypatch):
    """Each batch processor's queue takes the record itself; a processor without such a queue
    gets the record's spans as the SDK's."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    message = _traced_message()
    records: list[object] = []
    monkeypatch.setattr(state, "emit", records.append)
    monkeypatch.setattr(state, "emit_steps", records.append)
    attempt = attempts.begin(message, "m")
    with attempt.current(), attempt.child("claim"):
        pass
    attempt.end(AttemptResult(ResultCode.OK))
    (record,) = records

    batches = [BatchSpanProcessor(_Nothing()), BatchSpanProcessor(_Nothing())]
    try:
        ScrubbingProcessor(batches).steps_emit()(record)
        assert [list(batch._batch_processor._queue) for batch in batches] == [[record], [record]]
    finally:
        for batch in batches:
            batch.shutdown()
    memory = InMemorySpanExporter()
    ScrubbingProcessor([SimpleSpanProcessor(memory)]).steps_emit()(record)
    assert [span.name for span in memory.get_finished_spans()] == ["step c", "claim"]


def _traced_message(traceparent: str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") -> StepMessage:
    """A first attempt's step message of a task traced under `traceparent`."""
    return StepMessage(TaskId="t-1", Cursor=0, Type=Phase.NORMAL, Module="m", Command="c", Timeout=1, Retry=0,
                       DispatchId="d-1", Attempt=1, Trace=TraceContext(TraceParent=traceparent))  # fmt: skip
