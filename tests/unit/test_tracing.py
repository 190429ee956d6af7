"""Tracing's pure parts (docs/guide/tracing.md): when it is on, what a bad variable says, the
trace context a task and its messages carry, and the masking of a command's own spans."""

from __future__ import annotations

import pytest

from common.engine.document import StepMessage
from common.engine.states import Phase
from common.engine.core.entries import Timing, create_task
from common.engine.core.units import publish_entry
from common.errors import ConfigError
from common.secrets.log_lines import hidden_values
from common.tracing import attempts, state
from common.tracing.carrier import TraceContext
from common.tracing.config import tracing_config
from tests.support.builders import make_step as step

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.mark.parametrize("environ, exporters", [
    ({}, None),
    ({"OTEL_SERVICE_NAME": "x"}, None),  # nothing to export to
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, ("otlp",)),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ("otlp",)),
    ({"OTEL_TRACES_EXPORTER": "console"}, ("console",)),
    ({"OTEL_TRACES_EXPORTER": "otlp,console"}, ("otlp", "console")),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, None),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, None),
])
def test_tracing_is_off_unless_an_exporter_is_configured(environ, exporters) -> None:
    config = tracing_config(environ)
    assert (config.exporters if config else None) == exporters


@pytest.mark.parametrize("environ, named", [
    ({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER='jaeger'"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL='grpc'"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER='sometimes'"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
     "OTEL_TRACES_SAMPLER_ARG='2'"),
])
def test_a_value_the_sdk_would_ignore_stops_the_process_naming_it(environ, named) -> None:
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        tracing_config(environ)


def test_a_traced_task_s_messages_carry_its_context_and_an_untraced_one_s_are_as_before() -> None:
    timing = Timing(100.0)
    traced = create_task(task_type="t", steps=[step("a")], parameters={}, timing=timing,
                         trace=TraceContext(TraceParent=PARENT))  # fmt: skip
    plain = create_task(task_type="t", steps=[step("a")], parameters={}, timing=timing)
    (entry,) = traced.Outbox
    assert entry.Body["Trace"] == {"TraceParent": PARENT, "TraceState": "", "Link": None}
    assert StepMessage.model_validate(entry.Body).Trace == traced.Trace
    assert "Trace" not in plain.Outbox[0].Body  # a module older than tracing reads it
    assert publish_entry(plain, plain.Runs[0], 100.0).Body == plain.Outbox[0].Body


def test_with_tracing_off_or_an_untraced_message_no_span_is_made() -> None:
    message = StepMessage(TaskId="t", Cursor=0, Type=Phase.NORMAL, Module="m", Command="c", Timeout=1, Retry=0,
                          DispatchId="d", Attempt=1, Trace=TraceContext(TraceParent=PARENT))  # fmt: skip
    assert state.emit is None
    assert attempts.begin(message, "m") is attempts.NO_ATTEMPT
    spans: list = []
    state.install(object(), spans.append)
    try:
        untraced = message.model_copy(update={"Trace": None})
        unsampled = message.model_copy(update={"Trace": TraceContext(TraceParent=PARENT[:-2] + "00")})
        assert attempts.begin(untraced, "m") is attempts.NO_ATTEMPT
        assert attempts.begin(unsampled, "m") is attempts.NO_ATTEMPT
    finally:
        state.install(None, None)


@pytest.mark.parametrize("text, parsed", [
    (PARENT, (0x4bf92f3577b34da6a3ce929d0e0e4736, 0x00f067aa0ba902b7, 1)),
    ("00-" + "0" * 32 + "-00f067aa0ba902b7-01", None),  # an all-zero trace id is invalid
    ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
    ("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", None),
    ("garbage", None),
])
def test_a_traceparent_is_read_strictly(text, parsed) -> None:
    assert attempts.parse_traceparent(text) == parsed


def test_a_command_s_own_span_is_masked_before_any_exporter_sees_it() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from common.tracing.scrub import ScrubbingProcessor

    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(ScrubbingProcessor([SimpleSpanProcessor(exported)]))
    tracer = provider.get_tracer("a.command")
    with hidden_values(["hunter2-value"]):
        with tracer.start_as_current_span("login hunter2-value") as span:
            span.set_attribute("note", "with hunter2-value")
            span.set_attribute("api_token", "plain-looking")
            span.add_event("connect", {"dsn": "mysql://root:pw@db/x"})
    (found,) = exported.get_finished_spans()
    assert found.name == "login ***"
    assert dict(found.attributes) == {"note": "with ***", "api_token": "***"}
    assert dict(found.events[0].attributes) == {"dsn": "mysql://root:***@db/x"}


def test_an_exporter_that_is_not_baton_s_gets_a_step_s_spans_as_sdk_spans() -> None:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from common.engine.changes import AttemptResult
    from common.engine.states import ResultCode
    from common.tracing.setup import install_provider

    exported, provider = InMemorySpanExporter(), TracerProvider()
    processor = SimpleSpanProcessor(exported)
    install_provider(provider, processor)  # as for OTEL_TRACES_EXPORTER=console
    try:
        message = StepMessage(TaskId="t", Cursor=0, Type=Phase.NORMAL, Module="m", Command="c", Timeout=1, Retry=0,
                              DispatchId="d", Attempt=1, Trace=TraceContext(TraceParent=PARENT))  # fmt: skip
        attempt = attempts.begin(message, "m")
        with attempt.current(), attempt.child("claim"):
            pass
        attempt.end(AttemptResult(ResultCode.OK))
    finally:
        install_provider(None)
    spans = exported.get_finished_spans()
    assert [s.name for s in spans] == ["step c", "claim"] and all(isinstance(s, ReadableSpan) for s in spans)
    assert spans[0].parent.span_id == 0x00F067AA0BA902B7 and spans[1].parent.span_id == spans[0].context.span_id
