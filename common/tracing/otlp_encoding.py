"""Finished spans as the body of an OTLP/HTTP export request (`ExportTraceServiceRequest`, in
protobuf's wire format), written directly as bytes.

The SDK's encoder builds a protobuf object for every span, attribute and value before it
serializes them, about 24 microseconds a span: with four spans a step, more than a tenth of a
module's CPU per transition. Writing the same fields straight into bytes costs a few
microseconds a span. The request it writes decodes to a message equal to the SDK encoder's
for the same spans (tests/unit/test_otlp_encoding.py), with one difference that changes nothing
a collector sees: spans are grouped by the identity of their resource, not by its value (every
span of a process shares one resource object; the SDK hashes the resource's JSON every span).

Field numbers are opentelemetry-proto's (trace/v1/trace.proto, common/v1/common.proto).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from common.tracing.state import origins

DOUBLE = struct.Struct("<d").pack
FIXED64 = struct.Struct("<Q").pack
FIXED32 = struct.Struct("<I").pack

# Span.flags: the W3C flags, plus "the is_remote of its parent is known" and "it is remote".
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200


_NO_SPAN = object()

# How a step's record (a plain tuple) writes its spans: common.tracing.step_record.otlp_spans,
# set when that module is imported (by the attempts that make records; it imports this one).
record_spans: Callable[[tuple], bytes] | None = None

# The varint of every value below 4 KiB, made once: a step's spans (a few hundred bytes each),
# their attributes' lengths and every field's tag are found here without a loop per byte. Up to
# 127 one byte; past it the low seven bits with the high bit set, then the rest (n >> 7), made as
# two slices joined: a third fewer instructions at import than a bytes() of a tuple each.
_KEPT = 4096
_LOW = bytes(range(128, 256))
LENGTHS = [bytes((n,)) for n in range(128)] + [
    _LOW[low:low + 1] + high for high in [bytes((n,)) for n in range(1, _KEPT >> 7)] for low in range(128)
]
FIELD_2 = LENGTHS[2 << 3 | 2]  # a length-delimited field 2's tag


def encode_request(spans: Sequence[Any]) -> bytes:
    """The request's bytes for `spans`: the SDK's ReadableSpans, records of a step's spans (plain
    tuples: common.tracing.step_record) and step_spans.StepSpans, which write their own spans."""
    step_spans = record_spans
    groups: dict[int, tuple[Any, dict[Any, list[bytes]]]] = {}
    last: tuple[Any, Any] = (_NO_SPAN, _NO_SPAN)  # the resource and scope of the span before, by identity
    encoded: list[bytes] = []
    for span in spans:
        step = type(span) is tuple  # a step's record: its spans written from its values
        resource, scope = origins[span[0]] if step else (span.resource, span.instrumentation_scope)
        # Most spans of a request (a module's steps) share the one before's resource and scope:
        # no lookup (a scope's hash is a Python call) unless they change.
        if resource is not last[0] or scope is not last[1]:
            found = groups.get(id(resource))
            if found is None:
                found = groups[id(resource)] = (resource, {})
            encoded = found[1].setdefault(scope or None, [])
            last = (resource, scope)
        if step:
            encoded.append(step_spans(span))
            continue
        steps = getattr(span, "otlp_spans", None)  # spans written without SDK objects (step_spans.StepSpans)
        encoded.append(steps() if steps is not None else message(2, _span(span)))  # ScopeSpans.spans (2)
    out = bytearray()
    for resource, scopes in groups.values():
        body = bytearray(message(1, _resource(resource)))
        for scope, encoded in scopes.items():
            scope_spans = bytearray(message(1, _scope(scope)))
            scope_spans += b"".join(encoded)
            if scope is not None and scope.schema_url:
                scope_spans += string(3, scope.schema_url)
            body += message(2, bytes(scope_spans))
        if resource.schema_url:
            body += string(3, resource.schema_url)
        out += message(1, bytes(body))
    return bytes(out)


def _span(span: Any) -> bytes:
    context = span.context
    parent = span.parent
    out = bytearray(b"\x0a\x10")  # 1 trace_id, 16 bytes
    out += context.trace_id.to_bytes(16, "big")
    out += b"\x12\x08"  # 2 span_id, 8 bytes
    out += context.span_id.to_bytes(8, "big")
    state = context.trace_state
    if state:
        out += string(3, ",".join(f"{key}={value}" for key, value in state.items()))
    if parent is not None:
        out += b"\x22\x08"  # 4 parent_span_id
        out += parent.span_id.to_bytes(8, "big")
    out += string(5, span.name)
    out += b"\x30"  # 6 kind: the proto's values are the SDK's plus one (0 is "unspecified")
    out += _varint(span.kind.value + 1)
    out += b"\x39"  # 7 start_time_unix_nano, fixed64
    out += FIXED64(span.start_time or 0)
    out += b"\x41"  # 8 end_time_unix_nano, fixed64
    out += FIXED64(span.end_time or 0)
    out += attributes(9, span.attributes)
    if span.dropped_attributes:
        out += b"\x50" + _varint(span.dropped_attributes)  # 10
    for event in span.events:
        out += message(11, _event(event))
    if span.dropped_events:
        out += b"\x60" + _varint(span.dropped_events)  # 12
    for link in span.links:
        out += message(13, _link(link))
    if span.dropped_links:
        out += b"\x70" + _varint(span.dropped_links)  # 14
    out += message(15, _status(span.status))
    out += b"\x85\x01"  # 16 flags, fixed32
    out += FIXED32(_HAS_IS_REMOTE | (_IS_REMOTE if parent is not None and parent.is_remote else 0))
    return bytes(out)


def _event(event: Any) -> bytes:
    out = bytearray(b"\x09")  # 1 time_unix_nano, fixed64
    out += FIXED64(event.timestamp or 0)
    out += string(2, event.name)
    out += attributes(3, event.attributes)
    if event.dropped_attributes:
        out += b"\x20" + _varint(event.dropped_attributes)  # 4
    return bytes(out)


def _link(link: Any) -> bytes:
    context = link.context
    out = bytearray(b"\x0a\x10")  # 1 trace_id
    out += context.trace_id.to_bytes(16, "big")
    out += b"\x12\x08"  # 2 span_id
    out += context.span_id.to_bytes(8, "big")
    out += attributes(4, link.attributes)
    if link.dropped_attributes:
        out += b"\x28" + _varint(link.dropped_attributes)  # 5
    out += b"\x35"  # 6 flags, fixed32
    out += FIXED32(_HAS_IS_REMOTE | (_IS_REMOTE if context.is_remote else 0))
    return bytes(out)


def _status(status: Any) -> bytes:
    if status is None:
        return b""
    out = string(2, status.description) if status.description else b""
    code = status.status_code.value
    return out + (b"\x18" + _varint(code) if code else b"")  # 3 code


_resources: dict[int, tuple[Any, bytes]] = {}  # a process has one or two: its own, a command's


def _resource(resource: Any) -> bytes:
    """Resource.attributes (1), encoded once per resource object (they are immutable)."""
    found = _resources.get(id(resource))
    if found is not None and found[0] is resource:
        return found[1]
    encoded = attributes(1, resource.attributes)
    if len(_resources) > 64:  # resources made and dropped (tests switching providers)
        _resources.clear()
    _resources[id(resource)] = (resource, encoded)
    return encoded


def _scope(scope: Any) -> bytes:
    if scope is None:
        return b""
    out = string(1, scope.name) if scope.name else b""
    if scope.version:
        out += string(2, scope.version)
    return out + attributes(3, scope.attributes)


def attributes(field: int, values: Mapping[str, Any] | None) -> bytes:
    """Repeated KeyValue: each a key (1) and an AnyValue (2). A value of a type OTLP has no
    place for is left out, as the SDK's encoder does (it logs it)."""
    if not values:
        return b""
    found = []
    for pair in values.items():
        encoded = _pairs.get(pair) if type(pair[1]) in _CACHED else None
        if encoded is None:
            encoded = _pair(*pair)
            if encoded is None:
                continue
        found.append(encoded)
    if not found:
        return b""
    tag = LENGTHS[field << 3 | 2]
    return tag + tag.join(found)  # each KeyValue after its field's tag


# A KeyValue's bytes (its length first) by its key and string or integer value. Most of a step's
# attributes repeat from step to step (the module, the command, the phase, the step's index, the
# attempt, a code); ids do not, and come and go in the cache, which is emptied when it grows
# past its bound. Only exactly str and int: True == 1, but a boolean is written otherwise.
_pairs: dict[tuple[str, Any], bytes] = {}
_PAIRS_BOUND = 4096
_CACHED = frozenset((str, int))


def _pair(key: str, value: Any) -> bytes | None:
    if type(value) is str:  # most of them (ids): AnyValue.string_value (1) written here
        text = value.encode("utf-8")
        encoded = b"\x0a" + _length(text) + text
    else:
        try:
            encoded = _value(value)
        except TypeError:
            return None
    body = string(1, key, always=True) + b"\x12" + _length(encoded) + encoded
    body = _length(body) + body
    if type(value) in _CACHED:
        if len(_pairs) >= _PAIRS_BOUND:
            _pairs.clear()
        _pairs[(key, value)] = body
    return body


def _value(value: Any) -> bytes:
    """An AnyValue: which field of its oneof carries the value says its type."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return string(1, value, always=True)
    if isinstance(value, int):
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)  # int64: negatives in two's complement
    if isinstance(value, float):
        return b"\x21" + DOUBLE(value)
    if isinstance(value, bytes):
        return message(7, value)
    if isinstance(value, Sequence):
        return message(5, b"".join(message(1, _value(v)) for v in value))
    if isinstance(value, Mapping):
        return message(6, b"".join(message(1, string(1, str(k)) + message(2, _value(v))) for k, v in value.items()))
    raise TypeError(f"not an attribute value: {type(value).__name__}")


def string(field: int, text: str, always: bool = False) -> bytes:
    """A string field; an empty one is left out (proto3's default) unless `always` (a oneof)."""
    if not text and not always:
        return b""
    return message(field, text.encode("utf-8"))


def message(field: int, body: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return _varint(field << 3 | 2) + _length(body) + body


def length(body: bytes) -> bytes:
    """A length-delimited field's length, as a varint."""
    size = len(body)
    return LENGTHS[size] if size < _KEPT else _varint(size)


_length = length


def varint(value: int) -> bytes:
    """A non-negative integer as a varint (a length known before its body is written)."""
    return _varint(value)


def _varint(value: int) -> bytes:
    if value < _KEPT:
        return LENGTHS[value]
    out = bytearray()
    while value > 127:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
