"""Which of a step's spans is current here, kept in a context variable of baton's own.

A step's attempt, claim and commit spans are current in turn while their work runs (a log line
written there carries their ids; a message published from the commit links to it). Making a span
current through OpenTelemetry (a new Context, attached, then detached) costs some forty Python
calls; a context variable set and reset costs two. So those three only set this variable, and
what reads the current span (log lines' ids, a published message's link, a sub-flow's link) asks
`ids()`. The command's span is still made current through OpenTelemetry: a command's own spans,
started through its usual API, must be its children.

The variable remembers the OpenTelemetry context current when it was set: once another span is
made current inside (a sub-flow's span in a commit, a command's own spans), that one is current
again, as it would be had the step's span been made current through OpenTelemetry.
"""

from __future__ import annotations

import contextvars
from typing import Any

from opentelemetry.context import get_current
from opentelemetry.trace import get_current_span

_CURRENT: contextvars.ContextVar[tuple[int, int, Any] | None] = contextvars.ContextVar("baton_step_span", default=None)


def make_current(trace_id: int, span_id: int) -> contextvars.Token:
    return _CURRENT.set((trace_id, span_id, get_current()))


def restore(token: contextvars.Token) -> None:
    _CURRENT.reset(token)


def ids() -> tuple[int, int] | None:
    """(trace id, span id) of the span current here, or None."""
    step = _CURRENT.get()
    if step is not None and step[2] is get_current():
        return step[0], step[1]
    context = get_current_span().get_span_context()
    return (context.trace_id, context.span_id) if context.is_valid else None
