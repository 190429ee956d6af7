"""baton's OTLP/HTTP exporter (common/tracing/exporter.py) in the configuration a process gets
from the OTEL_* variables (common/tracing/setup.py), sending to a real OTLP/HTTP receiver on
this machine (tests/support/otlp_receiver.py): a step's spans, handed over as one record, and
a span made through the SDK's API arrive as the spans a collector reads, gzip or not."""

from __future__ import annotations

import pytest

from common.engine.changes import AttemptResult
from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode
from common.tracing import attempts
from common.tracing.carrier import TraceContext
from common.tracing.exporter import OtlpExporter
from common.tracing.setup import install_provider
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.cluster import STATE_DEADLINE, wait_until

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TASK_SPAN = "00f067aa0ba902b7"


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_step_s_record_and_an_sdk_span_reach_the_receiver(monkeypatch, compression) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from common.tracing.scrub import ScrubbingProcessor

    receiver = OtlpReceiver().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression)
    provider = TracerProvider()
    processor = ScrubbingProcessor([BatchSpanProcessor(OtlpExporter())])
    provider.add_span_processor(processor)
    install_provider(provider, processor, step_records=True)
    try:
        message = StepMessage(TaskId="t-1", Cursor=0, Type=Phase.NORMAL, Module="m", Command="c", Timeout=1,
                              Retry=0, DispatchId="d-1", Attempt=1,
                              Trace=TraceContext(TraceParent=f"00-{TRACE}-{TASK_SPAN}-01"))  # fmt: skip
        attempt = attempts.begin(message, "m")
        with attempt.current():
            with attempt.child("claim"):
                pass
            attempt.start_command("thread")
            with attempt.in_command():
                with provider.get_tracer("a.command").start_as_current_span("a command's own"):
                    pass
            attempt.command_ended(AttemptResult(ResultCode.FAILED, message="it broke"))
            with attempt.child("commit"):
                pass
        attempt.end(AttemptResult(ResultCode.FAILED, message="it broke"))
        provider.force_flush()
        wait_until(lambda: len(receiver.trace(TRACE)) == 5, STATE_DEADLINE, "the five spans")
    finally:
        install_provider(None)
        provider.shutdown()
        receiver.stop()
    spans = {s.name: s for s in receiver.trace(TRACE)}
    step = spans["step c"]
    assert (step.parent_id, step.kind, step.status_code, step.status_message) == (TASK_SPAN, "CONSUMER", 2, "it broke")
    assert step.attributes["baton.task.id"] == "t-1" and step.attributes["baton.code"] == "FAILED"
    assert {spans[n].parent_id for n in ("claim", "command c", "commit")} == {step.span_id}
    assert spans["a command's own"].parent_id == spans["command c"].span_id
    assert spans["claim"].start_ns <= spans["claim"].end_ns <= spans["commit"].start_ns <= step.end_ns
