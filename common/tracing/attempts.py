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
written there carries its ids and a step message published from the commit links to it; the
command's is OpenTelemetry's current context too, so a command's own spans (started through the
SDK's usual API) are its children.

A message without a trace context (its task was submitted while OSS did not trace), or whose
trace was not sampled, makes no span. With tracing off, `begin` answers NO_ATTEMPT, whose every
method does nothing: no span object is ever made.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any

from opentelemetry.context import attach, detach
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from common.engine.document import StepMessage, Task
from common.engine.states import Phase
from common.engine.changes import AttemptResult
from common.secrets.log_lines import masked
from common.tracing import attributes as a
from common.tracing import current_step, state
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


def parse_traceparent(text: str) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a W3C traceparent of version 00, or None."""
    parts = text.split("-")
    if len(parts) != 4 or parts[0] != "00" or len(parts[1]) != 32 or len(parts[2]) != 16 or len(parts[3]) != 2:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    return (trace_id, span_id, flags) if trace_id and span_id else None


def traceparent(trace_id: int, span_id: int) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-01"


class _Attempt(NoAttempt):
    def __init__(self, message: StepMessage, module: str, parent: tuple[int, int, int]):
        self._trace_id, task_span, _ = parent
        self._phase, self._cursor, self._command_name = message.Type, message.Cursor, message.Command
        attributes: dict[str, Any] = {
            a.MESSAGING_SYSTEM: "rabbitmq", a.MESSAGING_OPERATION: "process", a.MESSAGING_DESTINATION: module,
            a.MESSAGING_MESSAGE_ID: message.DispatchId, a.TASK_ID: message.TaskId, a.STEP: message.Cursor,
            a.PHASE: message.Type.label, a.ATTEMPT: message.Attempt, a.MODULE: module, a.COMMAND: message.Command,
        }
        if message.Item is not None:
            attributes[a.ITEM] = message.Item
        self._span = StepSpan(f"{_verb(message.Type)} {message.Command}", _new_id(), task_span, 4, attributes)
        link = parse_traceparent(message.Trace.Link) if message.Trace and message.Trace.Link else None
        if link is not None and link[0] == self._trace_id:
            self._span.links.append(link[1])
        self._children: list[StepSpan] = []
        self._command: StepSpan | None = None

    def current(self) -> contextlib.AbstractContextManager[Any]:
        return _current(self._trace_id, self._span.span_id)

    def child(self, name: str) -> contextlib.AbstractContextManager[Any]:
        span = StepSpan(name, _new_id(), self._span.span_id)
        self._children.append(span)
        return _Current(self._trace_id, span.span_id, span)

    def claimed(self, task: Task) -> None:
        name = task.Steps[self._cursor].Name
        self._span.attributes[a.TASK_TYPE] = task.TaskType
        self._span.attributes[a.STEP_NAME] = name
        self._span.name = f"{_verb(self._phase)} {name}"

    def dropped(self, reason: str) -> None:
        self._span.attributes[a.DROPPED] = reason

    def start_command(self, kind: str) -> None:
        self._command = StepSpan(f"command {self._command_name}", _new_id(), self._span.span_id, 0, {a.COMMAND_KIND: kind})
        self._children.append(self._command)

    def in_command(self) -> contextlib.AbstractContextManager[Any]:
        return _InOpenTelemetry(self._trace_id, self._command.span_id) if self._command is not None else _NOTHING

    def command_traceparent(self) -> str | None:
        return traceparent(self._trace_id, self._command.span_id) if self._command is not None else None

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


def _verb(phase: Phase) -> str:
    return "step" if phase is Phase.NORMAL else "rollback"


def _new_id() -> int:
    while True:
        found = random.getrandbits(64)
        if found:
            return found


def _conclude(span: StepSpan, result: AttemptResult | None) -> None:
    """An attempt's outcome on its span: its code, and an error with its message masked as a
    log line is (the message may quote a secret parameter)."""
    if result is None:
        span.attributes[a.OUTCOME] = "stopped by the module's shutdown"
        return
    span.attributes[a.CODE] = result.code.name
    if result.check_again is not None:
        span.attributes[a.CHECK_AGAIN] = result.check_again
    if result.verified is not None:
        span.attributes[a.VERDICT] = result.verified[0]
    if not result.ok:
        span.error = masked(result.message)


def _current(trace_id: int, span_id: int) -> contextlib.AbstractContextManager[Any]:
    return _Current(trace_id, span_id, None)


class _Current:
    """Makes a span current for a block (common/tracing/current_step.py), and ends `ends` (the
    span, unless it ends later) with the block. It runs three times a step, so it sets baton's
    own context variable rather than OpenTelemetry's context."""

    __slots__ = ("_trace_id", "_span_id", "_ends", "_token")

    def __init__(self, trace_id: int, span_id: int, ends: StepSpan | None):
        self._trace_id = trace_id
        self._span_id = span_id
        self._ends = ends

    def __enter__(self) -> None:
        self._token = current_step.make_current(self._trace_id, self._span_id)

    def __exit__(self, *_: object) -> None:
        current_step.restore(self._token)
        if self._ends is not None:
            self._ends.end = time.time_ns()


class _InOpenTelemetry:
    """Makes a span's context OpenTelemetry's current one for a block (a NonRecordingSpan
    carrying its ids): what the SDK's tracer makes a new span a child of."""

    __slots__ = ("_context", "_token")

    def __init__(self, trace_id: int, span_id: int):
        self._context = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=False, trace_flags=_SAMPLED))

    def __enter__(self) -> None:
        self._token = attach(set_span_in_context(self._context))

    def __exit__(self, *_: object) -> None:
        detach(self._token)
