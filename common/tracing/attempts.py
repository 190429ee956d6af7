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

from common.engine.document import StepMessage, Task
from common.engine.states import ResultCode
from common.engine.changes import AttemptResult
from common.secrets.log_lines import masked
from common.tracing import state, step_record
from common.tracing.carrier import parse_traceparent
from common.tracing.current_step import CURRENT, otel_attach, otel_current, otel_detach, with_span
from common.tracing.step_spans import StepSpan, StepSpans

_NOTHING = contextlib.nullcontext()
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
    if state.emit is None or message.Trace is None:
        return NO_ATTEMPT
    parent = parse_traceparent(message.Trace.TraceParent)
    if parent is None or not parent[2] & 1:  # not a valid context, or not sampled
        return NO_ATTEMPT
    return _Attempt(message, module, parent)


def traceparent(trace_id: int, span_id: int) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-01"


def _new_id() -> int:
    while True:
        found = random.getrandbits(64)
        if found:
            return found


class _Attempt(NoAttempt):
    """A traced attempt: what its spans say, kept as plain values while the step runs, and
    itself the record its end hands to the span processor (common/tracing/step_record.py writes
    its spans from these values, in the exporter's thread), and the block `current()` answers.
    A child's block is an object of its own: the commit runs on another thread than the claim,
    and may begin before the attempt's block is left."""

    __slots__ = ("message", "module", "trace_id", "trace_hex", "task_span", "base", "start", "end_time",
                 "claim", "commit", "kind", "command_start", "command_end", "command_result", "command_error",
                 "result", "error", "task_type", "step_name", "dropped_reason", "others", "resource",
                 "instrumentation_scope", "_token")  # fmt: skip
    context = StepSpans.context  # what a span processor reads before it queues an item: sampled

    def __init__(self, message: StepMessage, module: str, parent: tuple[int, int, int]):
        # The message is read again when the spans are written: a parsed message is never changed.
        self.message, self.module = message, module
        self.trace_id, self.task_span, _ = parent
        self.trace_hex = format(parent[0], "032x")
        # The step's four span ids from one random draw: the attempt's, then claim, command and
        # commit in its two low bits (never zero; unique within the trace as ids drawn apart are).
        self.base = (random.getrandbits(62) or 1) << 2
        self.start = time.time_ns()
        self.end_time = 0
        self.claim: _Block | None = None  # its times, once begun
        self.commit: _Block | None = None
        self.kind: str | None = None  # the command's, once it starts
        self.command_start = self.command_end = 0
        self.command_result: AttemptResult | None = None
        self.command_error: str | None = None
        self.result: AttemptResult | None = None
        self.error: str | None = None  # an outcome's (masked) message, when it is not OK
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
            block = self.claim = _Block(self, self.base | 1)
            return block
        if name == "commit":
            block = self.commit = _Block(self, self.base | 3)
            return block
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
        return f"00-{self.trace_hex}-{self.base | 2:016x}-01" if self.kind is not None else None

    def command_ended(self, result: AttemptResult | None) -> None:
        if self.kind is not None and not self.command_end:
            self.command_end = time.time_ns()
            self.command_result = result
            if result is not None and result.code is not ResultCode.OK:
                self.command_error = masked(result.message)

    def end(self, result: AttemptResult | None = None) -> None:
        if self.end_time:
            return
        self.end_time = time.time_ns()
        if result is not None:
            self.result = result
            if result.code is not ResultCode.OK:
                self.error = masked(result.message)  # masked here: the secrets are this context's
        emit = state.emit_steps
        if emit is not None:
            self.resource, self.instrumentation_scope = state.resource, state.scope
            emit(self)

    def otlp_spans(self) -> bytes:
        return step_record.otlp_spans(self)

    def readable(self) -> list[Any]:
        return StepSpans(self.trace_id, step_record.spans(self), self.resource, self.instrumentation_scope).readable()


class _Block:
    """A claim or commit: current for its block, its times taken at the block's start and end."""

    __slots__ = ("_attempt", "_span_id", "_token", "start", "end")

    def __init__(self, attempt: _Attempt, span_id: int):
        self._attempt = attempt
        self._span_id = span_id
        self.start = time.time_ns()
        self.end = 0

    def __enter__(self) -> None:
        attempt = self._attempt
        self._token = CURRENT.set((attempt.trace_id, self._span_id, otel_current(), attempt.trace_hex))

    def __exit__(self, *_: object) -> None:
        CURRENT.reset(self._token)
        self.end = time.time_ns()


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
        self._span = NonRecordingSpan(SpanContext(attempt.trace_id, span_id, is_remote=False, trace_flags=_SAMPLED))

    def __enter__(self) -> None:
        self._token = otel_attach(with_span(self._span))

    def __exit__(self, *_: object) -> None:
        otel_detach(self._token)
