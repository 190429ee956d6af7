"""The trace context a task carries (docs/design/task-document.md, `Trace`), as W3C text.

`TraceParent` and `TraceState` are the W3C `traceparent` and `tracestate` values of the task's
root span (its submission, or the sub-flow start of a child task). A step message copies them
from the document, so whoever runs the step (a redelivery, another replica after a crash) starts
its span in the same trace. A message may also name the span that published it (`Link`): the
attempt links to it instead of nesting under it, so a long line of steps or a `for_each` over
thousands of items never nests deeper than one level under its task.

No OpenTelemetry import here: the document model imports this, and a CLI command reading a task
must not pay for the tracing packages.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# A traceparent is 55 characters; tracestate at most 32 members of at most 256 (W3C).
MAX_TRACEPARENT = 64
MAX_TRACESTATE = 512


class TraceContext(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    TraceParent: str = Field(max_length=MAX_TRACEPARENT)
    TraceState: str = Field("", max_length=MAX_TRACESTATE)
    # In a step message only: the traceparent of the span that published it.
    Link: str | None = Field(None, max_length=MAX_TRACEPARENT)


def parse_traceparent(text: str) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a W3C traceparent of version 00, or None."""
    # Sliced rather than split (a step reads two): the three dashes where they belong and no other
    # (int() would take a leading minus), and int() refuses anything else but hexadecimal digits
    # save an underscore or a plus, which it reads as a number all the same, as split did.
    if len(text) != 55 or text[:3] != "00-" or text[35] != "-" or text[52] != "-" or text.count("-") != 3:
        return None
    flags = _FLAGS.get(text[53:])
    try:
        trace_id, span_id = int(text[3:35], 16), int(text[36:52], 16)
    except ValueError:
        return None
    return (trace_id, span_id, flags) if trace_id and span_id and flags is not None else None


def linked_span(text: str, trace_parent: str) -> int:
    """The span id a step message's `Link` names when it is in the trace of `trace_parent` (a
    valid traceparent), or 0: parse_traceparent's checks, but for the trace id already read."""
    if len(text) != 55 or text[:36] != trace_parent[:36] or text[52] != "-" or text.count("-") != 3 or text[53:] not in _FLAGS:
        return 0
    try:
        return int(text[36:52], 16)
    except ValueError:
        return 0


# The flags field's every spelling (two hexadecimal digits, either case), read without int().
_FLAGS = {f"{a}{b}": int(a + b, 16) for a in "0123456789abcdefABCDEF" for b in "0123456789abcdefABCDEF"}
