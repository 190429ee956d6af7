"""A step's four spans (common/tracing/attempts.py) from the plain values its attempt kept: as
OTLP bytes for baton's exporter, or as span records for any other.

The step's thread only takes ids and times; what its spans say (names, attributes, status) is
worked out here, in the exporter's thread, once. `otlp_spans` writes the same bytes as
common.tracing.step_spans would for the spans `spans` answers (tests/unit/test_step_record.py),
but most of a span's attributes repeat from step to step (the module's, the command, the step,
the phase, the task's type, a code): they are written once and kept, a group at a time, where
writing them one by one costs more than the rest of the span.
"""

from __future__ import annotations

import struct
from typing import Any

from common.engine.states import Phase
from common.tracing import attributes as a
from common.tracing import otlp_encoding as wire
from common.tracing.carrier import linked_span
from common.tracing.step_spans import StepSpan, encoded_span

_VERB = {phase: "step" if phase is Phase.NORMAL else "rollback" for phase in Phase}
_SHUTDOWN = "stopped by the module's shutdown"  # a command's outcome when the module stopped it


def spans(attempt: Any) -> list[StepSpan]:
    """The attempt's spans: the attempt, then its claim, command, commit and other children."""
    base = attempt.base
    attempt_span = StepSpan(_attempt_name(attempt), base, attempt.task_span, 4, _attempt_attributes(attempt))
    attempt_span.start, attempt_span.end, attempt_span.error = attempt.start, attempt.end_time, attempt.error
    link = _link(attempt)
    if link:
        attempt_span.links = (link,)
    found = [attempt_span]
    if attempt.claim_start:
        found.append(_child("claim", base | 1, base, attempt.claim_start, attempt.claim_end))
    if attempt.kind is not None:
        command = StepSpan(f"command {attempt.command}", base | 2, base, 0, _command_attributes(attempt))
        command.start, command.end, command.error = attempt.command_start, attempt.command_end, attempt.command_error
        found.append(command)
    if attempt.commit_start:
        found.append(_child("commit", base | 3, base, attempt.commit_start, attempt.commit_end))
    return [*found, *attempt.others]


def _child(name: str, span_id: int, parent: int, start: int, end: int) -> StepSpan:
    span = StepSpan(name, span_id, parent)
    span.start, span.end = start, end
    return span


def _attempt_name(attempt: Any) -> str:
    return f"{_VERB[attempt.phase]} {attempt.step_name if attempt.task_type is not None else attempt.command}"


def _link(attempt: Any) -> int:
    link = attempt.link
    return linked_span(link, attempt.trace_parent) if link else 0  # only a link within the same trace


def _attempt_attributes(attempt: Any) -> dict[str, Any]:
    module = attempt.module
    found = {a.MESSAGING_SYSTEM: "rabbitmq", a.MESSAGING_OPERATION: "process", a.MESSAGING_DESTINATION: module,
             a.MODULE: module, a.MESSAGING_MESSAGE_ID: attempt.dispatch_id, a.TASK_ID: attempt.task_id,
             a.STEP: attempt.cursor, a.PHASE: attempt.phase.label, a.ATTEMPT: attempt.attempt_number,
             a.COMMAND: attempt.command}  # fmt: skip
    if attempt.item is not None:
        found[a.ITEM] = attempt.item
    if attempt.task_type is not None:
        found[a.TASK_TYPE] = attempt.task_type
        found[a.STEP_NAME] = attempt.step_name
    if attempt.dropped_reason is not None:
        found[a.DROPPED] = attempt.dropped_reason
    if attempt.outcome is not None:
        found.update(_outcome(attempt.outcome))
    return found


def _command_attributes(attempt: Any) -> dict[str, Any]:
    found: dict[str, Any] = {a.COMMAND_KIND: attempt.kind}
    if attempt.command_end:  # ended: with its outcome, or stopped by the module's shutdown
        outcome = attempt.command_outcome
        found.update(_outcome(outcome) if outcome is not None else {a.OUTCOME: _SHUTDOWN})
    return found


def _outcome(outcome: tuple[str, float | None, str | None]) -> dict[str, Any]:
    """An outcome's attributes from (code's name, check again, verify's verdict)."""
    code, check_again, verdict = outcome
    found: dict[str, Any] = {a.CODE: code}
    if check_again is not None:
        found[a.CHECK_AGAIN] = check_again
    if verdict is not None:
        found[a.VERDICT] = verdict
    return found


# A string attribute written straight: the message's id, new every step (kept, it would only
# push out what does repeat), and a task's id the first time it is seen.
_MESSAGE_ID_KEY = wire.string(1, a.MESSAGING_MESSAGE_ID) + b"\x12"  # KeyValue's key, then its value's tag
_TASK_ID_KEY = wire.string(1, a.TASK_ID) + b"\x12"
_TAG = bytes([9 << 3 | 2])  # a span's attributes field (9)
_LENGTHS = wire.LENGTHS
_FIELD_2 = wire.FIELD_2


def _length(body: bytes) -> bytes:
    size = len(body)
    return _LENGTHS[size] if size < 4096 else wire.length(body)


def _text(key: bytes, value: str) -> bytes:
    """A span's attribute (9) with a string value; `key`: its KeyValue's key field and value tag."""
    text = value.encode("utf-8")
    any_value = b"\x0a" + _length(text) + text  # AnyValue.string_value (1)
    body = key + _length(any_value) + any_value
    return _TAG + _length(body) + body


# Everything of a string attribute before its text depends only on its key and the text's
# length: kept by length, one per key (a message id is as long as the one before).
_MESSAGE_ID_FRAMES: dict[int, bytes] = {}


def _text_frame(frames: dict[int, bytes], key: bytes, size: int) -> bytes:
    if len(frames) >= 256:
        frames.clear()
    text_length = wire.length(bytes(size))
    any_length = 1 + len(text_length) + size
    body_length = len(key) + len(wire.length(bytes(any_length))) + any_length
    found = frames[size] = (_TAG + wire.length(bytes(body_length)) + key + wire.length(bytes(any_length)) + b"\x0a"
                            + text_length)  # fmt: skip
    return found


# What repeats from step to step, written once: a group of attributes by what decides them.
_GROUPS: dict[Any, bytes] = {}
_GROUPS_BOUND = 4096
_OUTCOMES: dict[tuple[str, float | None, str | None], bytes] = {}  # by (code, check again, verdict)


def _group(key: Any, values: dict[str, Any]) -> bytes:
    if len(_GROUPS) >= _GROUPS_BOUND:  # task ids come and go
        _GROUPS.clear()
    found = _GROUPS[key] = wire.attributes(9, values)
    return found


def _attempt_attribute_bytes(attempt: Any) -> bytes:
    module, command, cursor, phase, task_id = attempt.module, attempt.command, attempt.cursor, attempt.phase, attempt.task_id
    key = ("module", module)
    fixed = _GROUPS.get(key)
    if fixed is None:
        fixed = _group(key, {a.MESSAGING_SYSTEM: "rabbitmq", a.MESSAGING_OPERATION: "process",
                             a.MESSAGING_DESTINATION: module, a.MODULE: module})  # fmt: skip
    text = attempt.dispatch_id.encode("utf-8")
    frame = _MESSAGE_ID_FRAMES.get(len(text))
    if frame is None:
        frame = _text_frame(_MESSAGE_ID_FRAMES, _MESSAGE_ID_KEY, len(text))
    parts = [fixed, frame, text]
    task = _GROUPS.get(task_id)
    if task is None:
        if len(_GROUPS) >= _GROUPS_BOUND:  # task ids come and go
            _GROUPS.clear()
        task = _GROUPS[task_id] = _text(_TASK_ID_KEY, task_id)
    parts.append(task)
    number = attempt.attempt_number
    key = ("step", cursor, phase, number, command)
    step = _GROUPS.get(key)
    if step is None:
        step = _group(key, {a.STEP: cursor, a.PHASE: phase.label, a.ATTEMPT: number, a.COMMAND: command})
    parts.append(step)
    if attempt.item is not None:
        parts.append(wire.attributes(9, {a.ITEM: attempt.item}))
    if attempt.task_type is not None:
        key = ("claimed", attempt.task_type, attempt.step_name)
        claimed = _GROUPS.get(key)
        if claimed is None:
            claimed = _group(key, {a.TASK_TYPE: attempt.task_type, a.STEP_NAME: attempt.step_name})
        parts.append(claimed)
    if attempt.dropped_reason is not None:
        parts.append(wire.attributes(9, {a.DROPPED: attempt.dropped_reason}))
    outcome = attempt.outcome
    if outcome is not None:
        found = _OUTCOMES.get(outcome)
        if found is None:
            if len(_OUTCOMES) >= _GROUPS_BOUND:  # "check again in" seconds may vary
                _OUTCOMES.clear()
            found = _OUTCOMES[outcome] = wire.attributes(9, _outcome(outcome))
        parts.append(found)
    return b"".join(parts)


def _command_attribute_bytes(attempt: Any) -> bytes:
    key = ("command", attempt.kind, attempt.command_end != 0, attempt.command_outcome)
    found = _GROUPS.get(key)
    if found is None:
        found = _group(key, _command_attributes(attempt))
    return found


# claim and commit: no attributes, no link, status unset; only their ids and times differ.
_IDS = struct.Struct(">QHQ").pack
_TIMES = struct.Struct("<BQBQ").pack
_PARENT_TAG = 0x2208  # 4 parent_span_id, 8 bytes
_KIND = {0: b"\x30\x01", 4: b"\x30\x05"}  # 6 kind: INTERNAL, CONSUMER
_TAIL = b"\x7a\x00\x85\x01" + wire.FIXED32(0x300)  # 15 status unset; 16 flags: parent remote
_CLAIM = wire.string(5, "claim") + _KIND[0]
_COMMIT = wire.string(5, "commit") + _KIND[0]
# ... so their length is the same every step too: a ScopeSpans.spans field's tag and length
# before the trace id's field (20 bytes), the ids (18), the name and kind, the times (18), the tail.
_CLAIM_FRAME = wire.FIELD_2 + _LENGTHS[20 + 18 + len(_CLAIM) + 18 + len(_TAIL)]
_COMMIT_FRAME = wire.FIELD_2 + _LENGTHS[20 + 18 + len(_COMMIT) + 18 + len(_TAIL)]


def otlp_spans(attempt: Any) -> bytes:
    """The attempt's spans as ScopeSpans.spans fields (2): each an OTLP `Span` message, framed."""
    trace = attempt.trace_id.to_bytes(16, "big")
    head = b"\x0a\x10" + trace + b"\x12\x08"  # 1 trace_id, then 2 span_id's tag
    base = attempt.base
    link = _link(attempt)
    body = encoded_span(head, trace, _attempt_name(attempt), base, attempt.task_span, 4, attempt.start,
                        attempt.end_time, _attempt_attribute_bytes(attempt), (link,) if link else (), attempt.error)
    size = len(body)
    parts = [_FIELD_2, _LENGTHS[size] if size < 4096 else wire.length(body), body]
    if attempt.claim_start:
        parts += (_CLAIM_FRAME, head, _IDS(base | 1, _PARENT_TAG, base), _CLAIM,
                  _TIMES(0x39, attempt.claim_start, 0x41, attempt.claim_end), _TAIL)  # fmt: skip
    if attempt.kind is not None:
        body = encoded_span(head, trace, f"command {attempt.command}", base | 2, base, 0, attempt.command_start,
                            attempt.command_end, _command_attribute_bytes(attempt), (), attempt.command_error)
        size = len(body)
        parts += (_FIELD_2, _LENGTHS[size] if size < 4096 else wire.length(body), body)
    if attempt.commit_start:
        parts += (_COMMIT_FRAME, head, _IDS(base | 3, _PARENT_TAG, base), _COMMIT,
                  _TIMES(0x39, attempt.commit_start, 0x41, attempt.commit_end), _TAIL)  # fmt: skip
    for span in attempt.others:
        body = encoded_span(head, trace, span.name, span.span_id, span.parent_id, span.kind, span.start, span.end,
                            wire.attributes(9, span.attributes), span.links, span.error)
        parts += (wire.FIELD_2, _length(body), body)
    return b"".join(parts)
