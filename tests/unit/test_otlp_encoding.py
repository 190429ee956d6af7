"""baton's OTLP encoder (common/tracing/otlp_encoding.py) against the SDK's own: for the same
spans, the request it writes decodes (with opentelemetry-proto's real message classes) to the
message the SDK's encoder builds, whatever a span holds."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from common.tracing.otlp_encoding import encode_request
from common.tracing.step_spans import StepSpan, StepSpans

TRACE = 0x4BF92F3577B34DA6A3CE929D0E0E4736
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
PROCESS = Resource({"service.name": "baton-m", "process.pid": 4242, "weight": 0.5})
OTHER = Resource({"service.name": "baton-oss"}, schema_url="https://opentelemetry.io/schemas/1.21.0")
BATON = InstrumentationScope("baton")
LIBRARY = InstrumentationScope("a.library", "1.2.3", "https://example.test/schema", {"lib.flag": True})


def _context(span_id: int, remote: bool = False, state: TraceState | None = None) -> SpanContext:
    return SpanContext(TRACE, span_id, is_remote=remote, trace_flags=SAMPLED, trace_state=state)


def _span(name: str, span_id: int, **fields) -> ReadableSpan:
    defaults = dict(context=_context(span_id), parent=_context(1, remote=True), resource=PROCESS,
                    kind=SpanKind.INTERNAL, start_time=1_700_000_000_000_000_000 + span_id,
                    end_time=1_700_000_000_000_500_000 + span_id, instrumentation_scope=BATON)  # fmt: skip
    return ReadableSpan(name=name, **{**defaults, **fields})


SPANS = [
    _span("step prepare", 2, kind=SpanKind.CONSUMER, links=[Link(_context(9, remote=True))],
          attributes={"baton.task.id": "t-1", "baton.step": 0, "baton.attempt": 1, "baton.item": -3,
                      "messaging.system": "rabbitmq", "empty": "", "off": False, "big": 2**62}),
    _span("claim", 3, parent=_context(2)),
    _span("command prepare", 4, parent=_context(2), status=Status(StatusCode.ERROR, "failed: a reason é ✓")),
    _span("commit", 5, parent=_context(2), status=Status(StatusCode.OK)),
    _span("submit demo", 6, parent=None, kind=SpanKind.SERVER, resource=OTHER,
          context=_context(6, state=TraceState([("vendor", "v1"), ("other", "x")])),
          attributes={"list": ("a", "b"), "ints": (1, 2), "floats": (0.5,), "flags": (True, False)}),
    _span("call the storage API " + "x" * 300, 7, parent=_context(4), instrumentation_scope=LIBRARY,
          events=[Event("connect", {"db.system": "mysql", "attempt": 2}, 1_700_000_000_000_100_000),
                  Event("bare", None, 1_700_000_000_000_200_000)],
          links=[Link(_context(3), {"why": "asked"})], kind=SpanKind.CLIENT),
    _span("no scope", 8, instrumentation_scope=None, kind=SpanKind.PRODUCER),
]


def test_the_request_decodes_to_what_the_sdk_s_encoder_builds() -> None:
    ours = ExportTraceServiceRequest.FromString(encode_request(SPANS))
    assert ours == encode_spans(SPANS)
    assert len(ours.resource_spans) == 2 and ours.resource_spans[1].schema_url == OTHER.schema_url


def test_dropped_counts_are_carried() -> None:
    attributes = BoundedAttributes(maxlen=2, attributes={"a": 1, "b": 2, "c": 3})
    span = _span("bounded", 10, attributes=attributes)
    assert span.dropped_attributes == 1
    ours = ExportTraceServiceRequest.FromString(encode_request([span]))
    assert ours == encode_spans([span])
    assert ours.resource_spans[0].scope_spans[0].spans[0].dropped_attributes_count == 1


def test_a_value_otlp_has_no_place_for_is_left_out_as_the_sdk_does() -> None:
    span = _span("odd", 11, attributes={"kept": "yes", "odd": object()})
    ours = ExportTraceServiceRequest.FromString(encode_request([span]))
    assert ours == encode_spans([span])
    assert [kv.key for kv in ours.resource_spans[0].scope_spans[0].spans[0].attributes] == ["kept"]


def test_nothing_to_send_is_an_empty_request() -> None:
    assert encode_request([]) == b"" == encode_spans([]).SerializeToString()


def _step_record() -> StepSpans:
    attempt = StepSpan("step prepare", 0x2A, 0x0F067AA0BA902B7, 4, {"baton.task.id": "t-1", "baton.attempt": 2,
                                                                    "messaging.system": "rabbitmq", "flag": True})
    attempt.links = (0x51,)
    claim = StepSpan("claim", 0x2B, 0x2A)
    command = StepSpan("command prepare", 0x2C, 0x2A, 0, {"baton.command.kind": "process"})
    command.error = "failed: masked ***"
    for span in (attempt, claim, command):
        span.end = span.start + 1500
    return StepSpans(TRACE, [attempt, claim, command], PROCESS, BATON)


def test_a_step_s_record_writes_what_its_sdk_spans_encode_to() -> None:
    record = _step_record()
    mixed = [record, SPANS[5]]  # a command's own span beside it, in the same request
    ours = ExportTraceServiceRequest.FromString(encode_request(mixed))
    assert ours == encode_spans([*record.readable(), SPANS[5]])
    spans = ours.resource_spans[0].scope_spans[0].spans
    assert [s.name for s in spans] == ["step prepare", "claim", "command prepare"]
    assert spans[2].status.code == 2 and spans[2].status.message == "failed: masked ***"
