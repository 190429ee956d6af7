"""The spans of one step message in a module (docs/guide/tracing.md, "What spans exist").

    step <name> | rollback <name>   the attempt (kind CONSUMER), a child of its task's span and
                                    linked to the span that published its message
      claim                         taking the run on the task document
      command <command>             the command, in its process, thread or coroutine; its own
                                    spans are children of this one
      commit                        recording the outcome and publishing what follows

These four spans are every step's, so they are made the cheap way: ids and times are taken as
the step goes, with the values the spans will say, and the attempt goes to the exporters at its
end as one record; its spans are written from it in the exporter's thread
(common.tracing.step_record), by baton's OTLP exporter straight into its request without an
SDK span object (an SDK span costs tens of microseconds to start, end and encode).
While a span's work runs, it is the current one (common/tracing/current_step.py), so a log line
written there carries its ids and a step message published from the commit links to it; a
thread or async command's is OpenTelemetry's current context too, so the command's own spans
(started through the SDK's usual API) are its children (a process command's are made in its
process, under the traceparent its request carries).

A message without a trace context (its task was submitted while OSS did not trace), or whose
trace was not sampled, makes no span. With tracing off, `begin` answers NO_ATTEMPT, whose every
method does nothing: no span object is ever made.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any

from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.span import DEFAULT_TRACE_STATE

from common.engine.document import StepMessage, Task
from common.engine.states import ResultCode
from common.engine.changes import AttemptResult
from common.secrets.log_lines import masked
from common.tracing import state
from common.tracing import step_record  # noqa: F401 - how the records made here are read (it says where)
from common.tracing.carrier import parse_traceparent
from common.tracing.current_step import CURRENT, otel_attach, otel_current, otel_detach, with_span
from common.tracing.step_spans import StepSpan

_NOTHING = contextlib.nullcontext()
_NO_OUTCOME = (None, None, None)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class NoAttempt:
    """Nothing to record: tracing is off, or this message's trace is not."""

    def current(self) -> contextlib.AbstractContextManager[Any]:
        return _NOTHING

    def child(self, name: str) -> contextlib.AbstractContextManager[Any]:
        return _NOTHING

    def claimed(self, task: Task) -> None:
        pass

    def dropped(self, reason: str) -> None:
        pass

    def start_command(self, kind: str) -> None:
        pass

    def in_command(self) -> contextlib.AbstractContextManager[Any]:
        return _NOTHING

    def command_traceparent(self) -> str | None:
        return None

    def command_ended(self, result: AttemptResult | None) -> None:
        pass

    def end(self, result: AttemptResult | None = None) -> None:
        pass


NO_ATTEMPT = NoAttempt()


def begin(message: StepMessage, module: str) -> NoAttempt:
    """The attempt's spans, or NO_ATTEMPT."""
    if state.emit is None:  # off: nothing else read
        return NO_ATTEMPT
    trace = message.Trace
    if trace is None:
        return NO_ATTEMPT
    parent = _PARENTS.get(trace.TraceParent, _UNSEEN)
    if parent is _UNSEEN:
        parent = _parent(trace.TraceParent)
    return _Attempt(message, module, parent) if parent is not None else NO_ATTEMPT


# What a traceparent says, by its text: every step of a task carries its task's (a module runs
# several of them, and parsing one costs more than the rest of `begin`).
_PARENTS: dict[str, tuple[int, int, str] | None] = {}
_PARENTS_BOUND = 4096
_UNSEEN = object()


def _parent(text: str) -> tuple[int, int, str] | None:
    """(trace id, span id, trace id in hex) of a valid, sampled traceparent, else None; kept."""
    if len(_PARENTS) >= _PARENTS_BOUND:  # tasks come and go
        _PARENTS.clear()
    parsed = parse_traceparent(text)
    sampled = parsed is not None and parsed[2] & 1
    found = _PARENTS[text] = (parsed[0], parsed[1], format(parsed[0], "032x")) if sampled else None  # type: ignore[index]
    return found


def traceparent(trace_id: int, span_id: int) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-01"


def _new_id() -> int:
    while True:
        found = random.getrandbits(64)
        if found:
            return found


class _Attempt(NoAttempt):
    """A traced attempt: what its spans say, kept as plain values while the step runs, and the
    block `current()` answers. Its end hands the span processor those values as one plain tuple
    (common/tracing/step_record.py says which is where, and writes the spans from it, in the
    exporter's thread).

    The record waits in the batch processor's queue (up to seconds), long enough to reach the
    garbage collector's oldest generation, whose every object a full collection walks and whose
    growth makes full collections come sooner. A flat tuple of strings, numbers and None is one
    the collector stops tracking the first time it looks at it: so the record holds the
    message's fields, not the message; the outcome's values, not the result; the phase's
    number, not its enum member; the process's resource by its number (state.origins). Only a
    child of another name than claim or commit (rare) keeps an object in it: its span."""

    __slots__ = ("module", "message", "trace_id", "trace_hex", "task_span", "base", "start", "end_time",
                 "claim_start", "claim_end", "commit_start", "commit_end", "kind", "command_start", "command_end",
                 "command_outcome", "command_error", "task_type", "step_name", "dropped_reason", "others",
                 "_token")  # fmt: skip

    def __init__(self, message: StepMessage, module: str, parent: tuple[int, int, str]):
        self.module = module
        self.message = message  # its fields are read at the end, into the record
        self.trace_id, self.task_span, self.trace_hex = parent
        # The step's four span ids from one random draw: the attempt's, then claim, command and
        # commit in its two low bits (never zero; unique within the trace as ids drawn apart are).
        self.base = (random.getrandbits(62) or 1) << 2
        self.start = time.time_ns()
        self.end_time = 0
        self.claim_start = self.claim_end = self.commit_start = self.commit_end = 0  # 0: not begun, not ended
        self.kind: str | None = None  # the command's, once it starts
        self.command_start = self.command_end = 0
        self.command_outcome: tuple[str | None, float | None, str | None] = _NO_OUTCOME  # (code, check again, verdict)
        self.command_error: str | None = None
        self.task_type: str | None = None
        self.step_name: str | None = None  # both known once claimed
        self.dropped_reason: str | None = None
        self.others: tuple[StepSpan, ...] = ()  # children of other names than claim and commit

    def current(self) -> contextlib.AbstractContextManager[Any]:
        return self

    def __enter__(self) -> None:
        self._token = CURRENT.set((self.trace_id, self.base, otel_current(), self.trace_hex))

    def __exit__(self, *_: object) -> None:
        CURRENT.reset(self._token)

    def child(self, name: str) -> contextlib.AbstractContextManager[Any]:
        if name == "claim":
            self.claim_start = time.time_ns()
            return _Block(self, self.base | 1)
        if name == "commit":
            self.commit_start = time.time_ns()
            return _Block(self, self.base | 3)
        span = StepSpan(name, _new_id(), self.base)
        self.others = (*self.others, span)
        return _Current(self, span.span_id, span)

    def claimed(self, task: Task) -> None:
        self.task_type = task.TaskType
        self.step_name = task.Steps[self.message.Cursor].Name

    def dropped(self, reason: str) -> None:
        self.dropped_reason = reason

    def start_command(self, kind: str) -> None:
        # A process command's own spans are made in its process, under command_traceparent()
        self.kind = kind
        self.command_start = time.time_ns()

    def in_command(self) -> contextlib.AbstractContextManager[Any]:
        if self.kind is None:
            return _NOTHING
        if self.kind != "process":
            return _InOpenTelemetry(self, self.base | 2)
        return _Current(self, self.base | 2, None)

    def command_traceparent(self) -> str | None:
        return f"00-{self.trace_hex}-{(self.base | 2).to_bytes(8, 'big').hex()}-01" if self.kind is not None else None

    def command_ended(self, result: AttemptResult | None) -> None:
        if self.kind is not None and not self.command_end:
            self.command_end = time.time_ns()
            if result is not None:
                verified = result.verified  # what the spans say of an outcome: code, check again, verdict
                self.command_outcome = (result.code._name_, result.check_again, verified[0] if verified is not None else None)
                if result.code is not ResultCode.OK:
                    self.command_error = masked(result.message)

    def end(self, result: AttemptResult | None = None) -> None:
        if self.end_time:
            return
        self.end_time = end = time.time_ns()
        emit = state.emit_steps
        if emit is None:
            return
        outcome, error = _NO_OUTCOME, None
        if result is not None:
            verified = result.verified
            outcome = (result.code._name_, result.check_again, verified[0] if verified is not None else None)
            if result.code is not ResultCode.OK:
                error = masked(result.message)  # masked here: the secrets are this context's
        message = self.message
        trace = message.Trace
        # In step_record.FIELDS' order, flat: a tuple inside would keep the collector tracking it
        # one collection longer.
        emit((state.origin, self.module, self.trace_id, self.task_span, self.base, self.start, end, message.TaskId,
              message.DispatchId, message.Command, message.Cursor, message.Type._value_, message.Attempt, message.Item,
              trace.Link, trace.TraceParent, self.claim_start, self.claim_end, self.commit_start,  # type: ignore[union-attr]
              self.commit_end, self.kind, self.command_start, self.command_end, *self.command_outcome,
              self.command_error, *outcome, error, self.task_type, self.step_name, self.dropped_reason, self.others))  # fmt: skip


class _Block:
    """A claim or commit: current for its block, its end's time written to the attempt. The
    attempt keeps no reference to it: once left, it is freed."""

    __slots__ = ("_attempt", "_span_id", "_token")

    def __init__(self, attempt: _Attempt, span_id: int):
        self._attempt = attempt
        self._span_id = span_id

    def __enter__(self) -> None:
        attempt = self._attempt
        self._token = CURRENT.set((attempt.trace_id, self._span_id, otel_current(), attempt.trace_hex))

    def __exit__(self, *_: object) -> None:
        CURRENT.reset(self._token)
        # The span id's low bits name the block (the attempt's ids: base | 1 claim, base | 3 commit).
        if self._span_id & 3 == 1:
            self._attempt.claim_end = time.time_ns()
        else:
            self._attempt.commit_end = time.time_ns()


class _Current:
    """Makes a span current for a block (common/tracing/current_step.py), and ends `ends` (the
    span, unless it ends later) with the block: a process command's, a child of another name."""

    __slots__ = ("_attempt", "_span_id", "_ends", "_token")

    def __init__(self, attempt: _Attempt, span_id: int, ends: StepSpan | None):
        self._attempt = attempt
        self._span_id = span_id
        self._ends = ends

    def __enter__(self) -> None:
        attempt = self._attempt
        self._token = CURRENT.set((attempt.trace_id, self._span_id, otel_current(), attempt.trace_hex))

    def __exit__(self, *_: object) -> None:
        CURRENT.reset(self._token)
        if self._ends is not None:
            self._ends.end = time.time_ns()


class _InOpenTelemetry:
    """Makes a span's context OpenTelemetry's current one for a block (a NonRecordingSpan
    carrying its ids): what the SDK's tracer makes a new span a child of. Only a command that
    runs in the module needs it: a process command's spans are made in its own process."""

    __slots__ = ("_span", "_token")

    def __init__(self, attempt: _Attempt, span_id: int):
        self._span = NonRecordingSpan(_context(attempt.trace_id, span_id))

    def __enter__(self) -> None:
        self._token = otel_attach(with_span(self._span))

    def __exit__(self, *_: object) -> None:
        otel_detach(self._token)


def _api_context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=_SAMPLED)


def _tuple_context(trace_id: int, span_id: int) -> SpanContext:
    # Valid ids (a traced attempt's): what SpanContext's own __new__ builds, without its checks
    # and keywords, in half the instructions.
    return tuple.__new__(SpanContext, (trace_id, span_id, False, _SAMPLED, DEFAULT_TRACE_STATE, True))


# The tuple's layout is the API's own business: used only while it builds the same context.
_context = _tuple_context if _tuple_context(7, 9) == _api_context(7, 9) else _api_context
