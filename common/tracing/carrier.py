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
    parts = text.split("-")
    if len(parts) != 4 or parts[0] != "00" or len(parts[1]) != 32 or len(parts[2]) != 16 or len(parts[3]) != 2:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    return (trace_id, span_id, flags) if trace_id and span_id else None
