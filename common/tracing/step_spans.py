"""A step's finished spans (the attempt, claim, command, commit: common/tracing/attempts.py) as
one record handed to the span processor, and the two forms an exporter can take them in.

A record goes through the provider's processors as one item (the batch processor queues it and
exports it from its own thread). An exporter of baton's (common/tracing/exporter.py) writes its
spans straight into the OTLP request (`otlp_spans`): no SDK span object is built for them. Any
other exporter (the console's, a test's in-memory one) gets the SDK's `ReadableSpan`s
(`readable`), built from the same record: both forms say the same thing.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from common.tracing import otlp_encoding as wire

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)
_KINDS = {0: SpanKind.INTERNAL, 4: SpanKind.CONSUMER}


class StepSpan:
    """One span under way: its ids, times, name and attributes."""

    __slots__ = ("name", "span_id", "parent_id", "start", "end", "attributes", "kind", "error", "links")

    def __init__(self, name: str, span_id: int, parent_id: int, kind: int = 0, attributes: dict[str, Any] | None = None):
        self.name = name
        self.span_id = span_id
        self.parent_id = parent_id
        self.start = time.time_ns()
        self.end = 0
        self.attributes = attributes or {}
        self.kind = kind  # SpanKind's value: 0 INTERNAL, 4 CONSUMER
        self.error: str | None = None  # the (masked) message of a span that did not end OK
        # Span ids in the same trace; a span without (most of a step's) shares the empty tuple:
        # a list each would be more objects for the garbage collector to walk while they queue.
        self.links: tuple[int, ...] = ()


class StepSpans:
    """A step's finished spans, all in one trace, all of baton's scope."""

    __slots__ = ("trace_id", "spans", "resource", "instrumentation_scope")
    # What a span processor reads before it queues an item: a step's spans are sampled (a step
    # whose trace is not makes none).
    context = SpanContext(1, 1, is_remote=False, trace_flags=_SAMPLED)

    def __init__(self, trace_id: int, spans: list[StepSpan], resource: Any, scope: Any):
        self.trace_id = trace_id
        self.spans = spans
        self.resource = resource
        self.instrumentation_scope = scope

    def otlp_spans(self) -> bytes:
        """The spans as ScopeSpans.spans fields (2): each an OTLP `Span` message, framed."""
        trace = self.trace_id.to_bytes(16, "big")
        head = b"\x0a\x10" + trace + b"\x12\x08"  # 1 trace_id, then 2 span_id's tag
        parts = []
        for span in self.spans:
            body = _encoded(head, trace, span)
            parts += (wire.FIELD_2, wire.length(body), body)
        return b"".join(parts)

    def readable(self) -> list[Any]:
        """The same spans as the SDK's ReadableSpan."""
        from opentelemetry.sdk.trace import ReadableSpan

        return [_readable(ReadableSpan, self, span) for span in self.spans]


# Every parent and link of a step's span is marked remote (made outside the SDK's tracer):
# Span.flags "is_remote known" and "remote"; Link.flags the same.
FLAGS = b"\x85\x01" + wire.FIXED32(0x300)
LINK_FLAGS = b"\x35" + wire.FIXED32(0x300)
# A link's field (13) and length: a trace id's field (18 bytes), a span id's (10), the flags (5).
LINK_FIELD = b"\x6a" + wire.LENGTHS[18 + 10 + len(LINK_FLAGS)]
KIND_FIELD = {0: b"\x30\x01", 4: b"\x30\x05"}  # 6 kind: INTERNAL, CONSUMER (the SDK's value plus one)
NO_STATUS = b"\x7a\x00"  # 15 status: present and empty, as the SDK's encoder writes UNSET


# A span's name field by its name: claim, commit and a module's few commands' spans repeat.
_NAMES: dict[str, bytes] = {}


def _name(name: str) -> bytes:
    if len(_NAMES) >= 1024:  # names made of many steps' names: kept bounded
        _NAMES.clear()
    found = _NAMES[name] = wire.string(5, name)
    return found


# A span's ids (2 span_id, 4 parent_span_id: big-endian, as bytes) and its times (7 and 8,
# fixed64: little-endian), each packed in one call.
IDS = struct.Struct(">QHQ").pack
PARENT_TAG = 0x2208  # 4 parent_span_id, 8 bytes
TIMES = struct.Struct("<BQBQ").pack


def _encoded(head: bytes, trace: bytes, span: StepSpan) -> bytes:
    return encoded_span(head, trace, span.name, span.span_id, span.parent_id, span.kind, span.start, span.end,
                        wire.attributes(9, span.attributes), span.links, span.error)


def encoded_span(head: bytes, trace: bytes, name: str, span_id: int, parent_id: int, kind: int, start: int, end: int,
                 attributes: bytes, links: tuple[int, ...], error: str | None) -> bytes:
    """One span's `Span` message. `head`: the trace id's field and the span id's tag, alike for a
    step's spans; `attributes`: its attributes' fields (9), written."""
    name_field = _NAMES.get(name)
    if name_field is None:
        name_field = _name(name)
    parts = [head, IDS(span_id, PARENT_TAG, parent_id), name_field, KIND_FIELD[kind], TIMES(0x39, start, 0x41, end),
             attributes]
    for linked in links:  # 13 links: trace_id, span_id, flags
        parts += (LINK_FIELD, b"\x0a\x10", trace, b"\x12\x08", linked.to_bytes(8, "big"), LINK_FLAGS)
    parts.append(NO_STATUS if error is None else error_status(error))
    parts.append(FLAGS)
    return b"".join(parts)


def error_status(error: str) -> bytes:
    """A span's status field (15) for an error: 2 message, 3 code ERROR."""
    return wire.message(15, wire.string(2, error) + b"\x18\x02")


def _readable(readable: type, record: StepSpans, span: StepSpan) -> Any:
    trace_id = record.trace_id
    return readable(
        name=span.name,
        context=SpanContext(trace_id, span.span_id, is_remote=False, trace_flags=_SAMPLED),
        parent=SpanContext(trace_id, span.parent_id, is_remote=True, trace_flags=_SAMPLED),
        resource=record.resource,
        attributes=span.attributes,
        links=[Link(SpanContext(trace_id, linked, is_remote=True, trace_flags=_SAMPLED)) for linked in span.links],
        kind=_KINDS[span.kind],
        status=Status(StatusCode.ERROR, span.error) if span.error is not None else _UNSET,
        start_time=span.start,
        end_time=span.end,
        instrumentation_scope=record.instrumentation_scope,
    )
