"""The spans of one step message in a module (docs/guide/tracing.md, "What spans exist").

    step <name> | rollback <name>   the attempt (kind CONSUMER), a child of its task's span and
                                    linked to the span that published its message
      claim                         taking the run on the task document
      command <command>             the command, in its process, thread or coroutine; its own
                                    spans are children of this one
      commit                        recording the outcome and publishing what follows

These four spans are every step's, so they are made the cheap way: ids and times are taken as
the step goes, and the finished spans go to the exporters at its end as one record
(common.tracing.step_spans), which baton's OTLP exporter writes into its request without an SDK
span object (an SDK span costs tens of microseconds to start, end and encode).
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
from common.engine.states import Phase, ResultCode
from common.engine.changes import AttemptResult
from common.secrets.log_lines import masked
from common.tracing import attributes as a
from common.tracing import state
from common.tracing.carrier import linked_span, parse_traceparent
from common.tracing.current_step import CURRENT, otel_attach, otel_current, otel_detach, with_span
from common.tracing.step_spans import StepSpan, StepSpans

_NOTHING = contextlib.nullcontext()
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_VERB = {phase: "step" if phase is Phase.NORMAL else "rollback" for phase in Phase}
_LABEL = {phase: phase.label for phase in Phase}


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


# The low bits of a step's span ids (common/runtime/step_handler.py's children; any other gets
# an id of its own); the attempt's are 0, the command's 2.
_CHILD_BITS = {"claim": 1, "commit": 3}


def _new_id() -> int:
    while True:
        found = random.getrandbits(64)
        if found:
            return found


# What every attempt of a module says alike: built once per module, not once per span.
_MODULE_ATTRIBUTES: dict[str, dict[str, Any]] = {}


def _module_attributes(module: str) -> dict[str, Any]:
    found = _MODULE_ATTRIBUTES[module] = {
        a.MESSAGING_SYSTEM: "rabbitmq", a.MESSAGING_OPERATION: "process", a.MESSAGING_DESTINATION: module,
        a.MODULE: module,
    }
    return found


class _Attempt(NoAttempt):
    __slots__ = ("_trace_id", "_trace_hex", "_base", "_phase", "_cursor", "_command_name", "_span", "_children",
                 "_command", "_command_in_module")

    def __init__(self, message: StepMessage, module: str, parent: tuple[int, int, int]):
        trace_id, task_span, _ = parent
        self._trace_id = trace_id
        self._trace_hex = format(trace_id, "032x")
        self._phase, self._cursor, self._command_name = phase, cursor, command = message.Type, message.Cursor, message.Command
        # The step's four span ids from one random draw: the attempt's, then claim, command and
        # commit in its two low bits (never zero; unique within the trace as ids drawn apart are).
        self._base = base = (random.getrandbits(62) or 1) << 2
        attributes = {**(_MODULE_ATTRIBUTES.get(module) or _module_attributes(module)), a.MESSAGING_MESSAGE_ID: message.DispatchId, a.TASK_ID: message.TaskId,
                      a.STEP: cursor, a.PHASE: _LABEL[phase], a.ATTEMPT: message.Attempt, a.COMMAND: command}  # fmt: skip
        if message.Item is not None:
            attributes[a.ITEM] = message.Item
        self._span = span = StepSpan(f"{_VERB[phase]} {command}", base, task_span, 4, attributes)
        link = message.Trace.Link
        if link:
            linked = linked_span(link, message.Trace.TraceParent)  # only a link within the same trace
            if linked:
                span.links = (linked,)
        self._children: list[StepSpan] = []
        self._command: StepSpan | None = None
        self._command_in_module = False

    def current(self) -> contextlib.AbstractContextManager[Any]:
        return _Current(self, self._base, None)

    def child(self, name: str) -> contextlib.AbstractContextManager[Any]:
        bits = _CHILD_BITS.get(name)
        span = StepSpan(name, self._base | bits if bits is not None else _new_id(), self._base)
        self._children.append(span)
        return _Current(self, span.span_id, span)

    def claimed(self, task: Task) -> None:
        name = task.Steps[self._cursor].Name
        attributes = self._span.attributes
        attributes[a.TASK_TYPE] = task.TaskType
        attributes[a.STEP_NAME] = name
        self._span.name = f"{_VERB[self._phase]} {name}"

    def dropped(self, reason: str) -> None:
        self._span.attributes[a.DROPPED] = reason

    def start_command(self, kind: str) -> None:
        self._command = StepSpan(f"command {self._command_name}", self._base | 2, self._base, 0, {a.COMMAND_KIND: kind})
        # A process command's own spans are made in its process, under command_traceparent()
        self._command_in_module = kind != "process"
        self._children.append(self._command)

    def in_command(self) -> contextlib.AbstractContextManager[Any]:
        command = self._command
        if command is None:
            return _NOTHING
        if self._command_in_module:
            return _InOpenTelemetry(self, command.span_id)
        return _Current(self, command.span_id, None)

    def command_traceparent(self) -> str | None:
        return f"00-{self._trace_hex}-{self._base | 2:016x}-01" if self._command is not None else None

    def command_ended(self, result: AttemptResult | None) -> None:
        if self._command is not None and not self._command.end:
            self._command.end = time.time_ns()
            _conclude(self._command, result)

    def end(self, result: AttemptResult | None = None) -> None:
        span = self._span
        if span.end:
            return
        span.end = time.time_ns()
        if result is not None:
            _conclude(span, result)
        emit = state.emit_steps
        if emit is not None:
            emit(StepSpans(self._trace_id, [span, *self._children], state.resource, state.scope))


def _conclude(span: StepSpan, result: AttemptResult | None) -> None:
    """An attempt's outcome on its span: its code, and an error with its message masked as a
    log line is (the message may quote a secret parameter)."""
    if result is None:
        span.attributes[a.OUTCOME] = "stopped by the module's shutdown"
        return
    code = result.code
    span.attributes[a.CODE] = code._name_  # the enum's name, without its property's call
    if result.check_again is not None:
        span.attributes[a.CHECK_AGAIN] = result.check_again
    if result.verified is not None:
        span.attributes[a.VERDICT] = result.verified[0]
    if code is not ResultCode.OK:
        span.error = masked(result.message)


class _Current:
    """Makes a span current for a block (common/tracing/current_step.py), and ends `ends` (the
    span, unless it ends later) with the block. It runs three or four times a step, so it sets
    baton's own context variable rather than OpenTelemetry's context."""

    __slots__ = ("_attempt", "_span_id", "_ends", "_token")

    def __init__(self, attempt: _Attempt, span_id: int, ends: StepSpan | None):
        self._attempt = attempt
        self._span_id = span_id
        self._ends = ends

    def __enter__(self) -> None:
        attempt = self._attempt
        self._token = CURRENT.set((attempt._trace_id, self._span_id, otel_current(), attempt._trace_hex))

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
        self._span = NonRecordingSpan(SpanContext(attempt._trace_id, span_id, is_remote=False, trace_flags=_SAMPLED))

    def __enter__(self) -> None:
        self._token = otel_attach(with_span(self._span))

    def __exit__(self, *_: object) -> None:
        otel_detach(self._token)
