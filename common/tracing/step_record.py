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

from typing import Any

from common.engine.states import Phase
from common.tracing import attributes as a
from common.tracing import otlp_encoding as wire
from common.tracing import state
from common.tracing.carrier import linked_span
from common.tracing.step_spans import (FLAGS, IDS, KIND_FIELD, LINK_FIELD, LINK_FLAGS, NO_STATUS, PARENT_TAG, TIMES,
                                       StepSpan, StepSpans, encoded_span, error_status)

# A step's record, as its attempt hands it over (common/tracing/attempts.py): a plain tuple,
# these values in this order. 0 is "not yet" for a time, None for the rest.
FIELDS = ("origin",  # the number of the process's resource and scope: state.origins
          "module", "trace_id", "task_span", "base", "start", "end", "task_id", "dispatch_id", "command", "cursor",
          "phase",  # Phase's value
          "attempt", "item", "link", "trace_parent", "claim_start", "claim_end", "commit_start", "commit_end",
          "kind", "command_start", "command_end",
          "command_code", "command_check_again", "command_verdict", "command_error",  # code: None before it ends
          "code", "check_again", "verdict", "error",  # the outcome: its code's name, or None
          "task_type", "step_name", "dropped", "others")  # fmt: skip
_TRACE_ID, _START, _END, _TASK_ID, _COMMAND, _PHASE, _ITEM, _LINK, _TRACE_PARENT = (
    FIELDS.index(name) for name in ("trace_id", "start", "end", "task_id", "command", "phase", "item", "link",
                                    "trace_parent"))  # fmt: skip
_VERB = {phase.value: "step" if phase is Phase.NORMAL else "rollback" for phase in Phase}
_LABEL = {phase.value: phase.label for phase in Phase}
_SHUTDOWN = "stopped by the module's shutdown"  # a command's outcome when the module stopped it


def readable(record: tuple) -> list[Any]:
    """The record's spans as the SDK's ReadableSpans (for an exporter other than baton's)."""
    resource, scope = state.origins[record[0]]
    return StepSpans(record[_TRACE_ID], spans(record), resource, scope).readable()


def origin(record: tuple) -> tuple[Any, Any]:
    """The record's resource and instrumentation scope."""
    return state.origins[record[0]]


def spans(record: tuple) -> list[StepSpan]:
    """The record's spans: the attempt, then its claim, command, commit and other children."""
    (_, module, _, task_span, base, start, end, task_id, dispatch_id, command, cursor, phase, number, item, _, _,
     claim_start, claim_end, commit_start, commit_end, kind, command_start, command_end, command_code,
     command_check_again, command_verdict, command_error, _, _, _, error, task_type, step_name, dropped,
     others) = record  # fmt: skip
    command_outcome = (command_code, command_check_again, command_verdict) if command_code is not None else None
    attempt_span = StepSpan(_attempt_name(record), base, task_span, 4, _attempt_attributes(record))
    attempt_span.start, attempt_span.end, attempt_span.error = start, end, error
    link = _link(record)
    if link:
        attempt_span.links = (link,)
    found = [attempt_span]
    if claim_start:
        found.append(_child("claim", base | 1, base, claim_start, claim_end))
    if kind is not None:
        command_span = StepSpan(f"command {command}", base | 2, base, 0, _command_attributes(kind, command_end, command_outcome))
        command_span.start, command_span.end, command_span.error = command_start, command_end, command_error
        found.append(command_span)
    if commit_start:
        found.append(_child("commit", base | 3, base, commit_start, commit_end))
    return [*found, *others]


def _child(name: str, span_id: int, parent: int, start: int, end: int) -> StepSpan:
    span = StepSpan(name, span_id, parent)
    span.start, span.end = start, end
    return span


def _attempt_name(record: tuple) -> str:
    task_type, step_name = record[-4], record[-3]
    return f"{_VERB[record[_PHASE]]} {step_name if task_type is not None else record[_COMMAND]}"


def _link(record: tuple) -> int:
    link = record[_LINK]
    return linked_span(link, record[_TRACE_PARENT]) if link else 0  # only a link within the same trace


def _attempt_attributes(record: tuple) -> dict[str, Any]:
    (_, module, _, _, _, _, _, task_id, dispatch_id, command, cursor, phase, number, item, _, _, _, _, _, _, _, _, _, _,
     _, _, _, code, check_again, verdict, _, task_type, step_name, dropped, _) = record  # fmt: skip
    found = _repeating(module, cursor, phase, number, command, task_type, step_name, code, check_again, verdict)
    found[a.MESSAGING_MESSAGE_ID] = dispatch_id
    found[a.TASK_ID] = task_id
    if item is not None:
        found[a.ITEM] = item
    if dropped is not None:
        found[a.DROPPED] = dropped
    return found


def _repeating(module: str, cursor: int, phase: int, number: int, command: str, task_type: str | None,
               step_name: str | None, code: str | None, check_again: float | None, verdict: str | None) -> dict[str, Any]:
    """The attempt's attributes that repeat from step to step (written first, as one group)."""
    found = {a.MESSAGING_SYSTEM: "rabbitmq", a.MESSAGING_OPERATION: "process", a.MESSAGING_DESTINATION: module,
             a.MODULE: module, a.STEP: cursor, a.PHASE: _LABEL[phase], a.ATTEMPT: number, a.COMMAND: command}  # fmt: skip
    if task_type is not None:
        found[a.TASK_TYPE] = task_type
        found[a.STEP_NAME] = step_name
    if code is not None:
        found.update(_outcome((code, check_again, verdict)))
    return found


def _command_attributes(kind: str, command_end: int, command_outcome: tuple | None) -> dict[str, Any]:
    found: dict[str, Any] = {a.COMMAND_KIND: kind}
    if command_end:  # ended: with its outcome, or stopped by the module's shutdown
        found.update(_outcome(command_outcome) if command_outcome is not None else {a.OUTCOME: _SHUTDOWN})
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


def _group(key: Any, values: dict[str, Any]) -> bytes:
    if len(_GROUPS) >= _GROUPS_BOUND:  # task ids come and go
        _GROUPS.clear()
    found = _GROUPS[key] = wire.attributes(9, values)
    return found


def _attempt_attribute_bytes(module: str, task_id: str, dispatch_id: str, command: str, cursor: int, phase: int,
                             number: int, item: int | None, code: str | None, check_again: float | None,
                             verdict: str | None, task_type: str | None, step_name: str | None,
                             dropped: str | None) -> bytes:  # fmt: skip
    key = (module, cursor, phase, number, command, task_type, step_name, code, check_again, verdict)
    fixed = _GROUPS.get(key)
    if fixed is None:
        fixed = _group(key, _repeating(module, cursor, phase, number, command, task_type, step_name, code,
                                       check_again, verdict))  # fmt: skip
    text = dispatch_id.encode("utf-8")
    frame = _MESSAGE_ID_FRAMES.get(len(text))
    if frame is None:
        frame = _text_frame(_MESSAGE_ID_FRAMES, _MESSAGE_ID_KEY, len(text))
    task = _GROUPS.get(task_id)
    if task is None:
        if len(_GROUPS) >= _GROUPS_BOUND:  # task ids come and go
            _GROUPS.clear()
        task = _GROUPS[task_id] = _text(_TASK_ID_KEY, task_id)
    if item is None and dropped is None:
        return b"".join((fixed, frame, text, task))
    parts = [fixed, frame, text, task]
    if item is not None:
        parts.append(wire.attributes(9, {a.ITEM: item}))
    if dropped is not None:
        parts.append(wire.attributes(9, {a.DROPPED: dropped}))
    return b"".join(parts)


def _command_attribute_bytes(kind: str, command_end: int, command_outcome: tuple | None) -> bytes:
    key = ("command", kind, command_end != 0, command_outcome)
    found = _GROUPS.get(key)
    if found is None:
        found = _group(key, _command_attributes(kind, command_end, command_outcome))
    return found


# claim and commit: no attributes, no link, status unset; only their ids and times differ.
_TAIL = NO_STATUS + FLAGS  # a claim's or commit's: no status, then the flags
_CLAIM = wire.string(5, "claim") + KIND_FIELD[0]
_COMMIT = wire.string(5, "commit") + KIND_FIELD[0]
# ... so their length is the same every step too: a ScopeSpans.spans field's tag and length
# before the trace id's field (20 bytes), the ids (18), the name and kind, the times (18), the tail.
_CLAIM_FRAME = wire.FIELD_2 + _LENGTHS[20 + 18 + len(_CLAIM) + 18 + len(_TAIL)]
_COMMIT_FRAME = wire.FIELD_2 + _LENGTHS[20 + 18 + len(_COMMIT) + 18 + len(_TAIL)]


# The attempt's and the command's spans are written in the same join as claim's and commit's:
# their length from what is not the same every step (name, attributes, a link, an error).
_FIXED = 20 + 18 + 2 + 18 + len(FLAGS)  # trace id's field and span id's tag, ids, kind, times, flags
_LINK_HEAD = LINK_FIELD + b"\x0a\x10"  # a link's field, then its trace id's field
_LINKED = len(_LINK_HEAD) + 16 + 2 + 8 + len(LINK_FLAGS)
# A span's name field: an attempt's by its phase, then its step's name (or command); a command's
# by the command's name. Nested dictionaries: no name to format, no tuple to hash, once kept.
_ATTEMPT_NAMES: dict[int, dict[str, bytes]] = {phase.value: {} for phase in Phase}
_COMMAND_NAMES: dict[str, bytes] = {}


def _name_field(names: dict[str, bytes], key: str, name: str) -> bytes:
    if len(names) >= 1024:  # names made of many steps' names: kept bounded
        names.clear()
    found = names[key] = wire.string(5, name)
    return found


def otlp_spans(record: tuple) -> bytes:
    """The record's spans as ScopeSpans.spans fields (2): each an OTLP `Span` message, framed;
    the same bytes as step_spans.encoded_span writes for each (tests/unit/test_step_record.py)."""
    (_, module, trace_id, task_span, base, start, end, task_id, dispatch_id, command, cursor, phase, number, item,
     link, trace_parent, claim_start, claim_end, commit_start, commit_end, kind, command_start, command_end,
     command_code, command_check_again, command_verdict, command_error, code, check_again, verdict, error, task_type,
     step_name, dropped, others) = record  # fmt: skip
    trace = trace_id.to_bytes(16, "big")
    head = b"\x0a\x10" + trace + b"\x12\x08"  # 1 trace_id, then 2 span_id's tag
    label = step_name if task_type is not None else command
    names = _ATTEMPT_NAMES[phase]
    name = names.get(label)
    if name is None:
        name = _name_field(names, label, f"{_VERB[phase]} {label}")
    attributes = _attempt_attribute_bytes(module, task_id, dispatch_id, command, cursor, phase, number, item, code,
                                          check_again, verdict, task_type, step_name, dropped)  # fmt: skip
    status = NO_STATUS if error is None else error_status(error)
    size = _FIXED + len(name) + len(attributes) + len(status)
    parts = [_FIELD_2, b"", head, IDS(base, PARENT_TAG, task_span), name, KIND_FIELD[4], TIMES(0x39, start, 0x41, end),
             attributes]  # fmt: skip
    linked = linked_span(link, trace_parent) if link else 0  # only a link within the same trace
    if linked:
        size += _LINKED
        parts += (_LINK_HEAD, trace, b"\x12\x08", linked.to_bytes(8, "big"), LINK_FLAGS)
    parts += (status, FLAGS)
    parts[1] = _LENGTHS[size] if size < 4096 else wire.varint(size)
    if claim_start:
        parts += (_CLAIM_FRAME, head, IDS(base | 1, PARENT_TAG, base), _CLAIM,
                  TIMES(0x39, claim_start, 0x41, claim_end), _TAIL)  # fmt: skip
    if kind is not None:
        name = _COMMAND_NAMES.get(command)
        if name is None:
            name = _name_field(_COMMAND_NAMES, command, f"command {command}")
        command_outcome = (command_code, command_check_again, command_verdict) if command_code is not None else None
        attributes = _command_attribute_bytes(kind, command_end, command_outcome)
        status = NO_STATUS if command_error is None else error_status(command_error)
        size = _FIXED + len(name) + len(attributes) + len(status)
        parts += (_FIELD_2, _LENGTHS[size] if size < 4096 else wire.varint(size), head, IDS(base | 2, PARENT_TAG, base),
                  name, KIND_FIELD[0], TIMES(0x39, command_start, 0x41, command_end), attributes, status, FLAGS)  # fmt: skip
    if commit_start:
        parts += (_COMMIT_FRAME, head, IDS(base | 3, PARENT_TAG, base), _COMMIT,
                  TIMES(0x39, commit_start, 0x41, commit_end), _TAIL)  # fmt: skip
    for span in others:
        body = encoded_span(head, trace, span.name, span.span_id, span.parent_id, span.kind, span.start, span.end,
                            wire.attributes(9, span.attributes), span.links, span.error)
        parts += (wire.FIELD_2, _length(body), body)
    return b"".join(parts)


# The two places a record is read without importing this module (it is above them).
state.readable = readable
wire.record_spans = otlp_spans
