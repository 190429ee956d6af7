"""Which of a step's spans is current here, kept in a context variable of baton's own.

A step's attempt, claim and commit spans are current in turn while their work runs (a log line
written there carries their ids; a message published from the commit links to it). Making a span
current through OpenTelemetry (a new Context, attached, then detached) costs some forty Python
calls; a context variable set and reset costs two. So those three only set this variable, and
what reads the current span (log lines' ids, a published message's link, a sub-flow's link) asks
`ids()`. The command's span is still made current through OpenTelemetry when the command runs in
the module (a thread or async command): its own spans, started through its usual API, must be
its children.

The variable remembers the OpenTelemetry context current when it was set: once another span is
made current inside (a sub-flow's span in a commit, a command's own spans), that one is current
again, as it would be had the step's span been made current through OpenTelemetry.
"""

from __future__ import annotations

import contextvars
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.trace import get_current_span
from opentelemetry.trace.propagation import _SPAN_KEY

# (trace id, span id, OpenTelemetry's context when set, the trace id in hex)
CURRENT: contextvars.ContextVar[tuple[int, int, Any, str] | None] = contextvars.ContextVar("baton_step_span", default=None)

# OpenTelemetry keeps its current context in a context variable of its own (its default runtime
# context): read and set it directly, a C call instead of three Python calls through its API,
# which these hooks make several times a step. Any other runtime context goes through the API.
_OTEL = getattr(getattr(otel_context, "_RUNTIME_CONTEXT", None), "_current_context", None)
if isinstance(_OTEL, contextvars.ContextVar):
    otel_current = _OTEL.get
    otel_attach = _OTEL.set
    otel_detach = _OTEL.reset
else:  # pragma: no cover - a runtime context configured through OTEL_PYTHON_CONTEXT
    otel_current = otel_context.get_current
    otel_attach = otel_context.attach
    otel_detach = otel_context.detach


def with_span(span: Any) -> Context:
    """The current OpenTelemetry context with `span` as its span (set_span_in_context's result)."""
    return Context({**otel_current(), _SPAN_KEY: span})


def make_current(trace_id: int, span_id: int) -> contextvars.Token:
    return CURRENT.set((trace_id, span_id, otel_current(), format(trace_id, "032x")))


def restore(token: contextvars.Token) -> None:
    CURRENT.reset(token)


def ids() -> tuple[int, int] | None:
    """(trace id, span id) of the span current here, or None."""
    step = CURRENT.get()
    if step is not None and step[2] is otel_current():
        return step[0], step[1]
    context = get_current_span().get_span_context()
    return (context.trace_id, context.span_id) if context.is_valid else None


def hex_ids() -> tuple[str, str] | None:
    """The same ids as a log line writes them (32 and 16 lower-case hex digits), or None."""
    step = CURRENT.get()
    if step is not None and step[2] is otel_current():
        return step[3], step[1].to_bytes(8, "big").hex()  # format(id, "016x"), in two thirds the instructions
    context = get_current_span().get_span_context()
    return (format(context.trace_id, "032x"), format(context.span_id, "016x")) if context.is_valid else None
